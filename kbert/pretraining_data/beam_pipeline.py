"""`create_pretraining_data_beam`: the records of `create_pretraining_data`, built as an Apache Beam pipeline.

    config = CreatePretrainingDataConfig(input=["gs://bucket/corpus/*.txt"], vocab="vocab.txt",
                                         out="gs://bucket/data/seq128", num_shards=256)
    create_pretraining_data_beam(config, ["--runner=DataflowRunner", "--project=...", ...])

The same functions as the one-process path run inside the pipeline, so every setting means the same:

1. each input file is read by `TextCorpus` (whole files: a document may span many lines) and tokenized
   by `tokenize_documents`; each document gets a 64-bit key hashed from (seed, file index, document
   index);
2. documents go to `ceil(documents / document_buffer)` partitions by key, so a partition is a uniformly
   random sample of the corpus of about `document_buffer` documents (the one-process path's pool);
3. each partition, sorted by key, goes through `create_pretraining_instances` with the partition as its
   pool of random next sentences (full sentences: packed across the partition's documents, so one
   partially filled input per partition where the one-process path has one in all), then
   `StaticMasker` (or nothing, for dynamic masking) and the one-process path's `tf.train.Example`
   encoding; seeds are hashed from (seed, partition);
4. each record draws a 64-bit random key: shard = key mod num_shards, and a shard is written sorted by
   key, so records are shuffled over the whole corpus and spread over the shards as in the one-process
   path (a shard is sorted in one worker's memory: give a large corpus enough shards, e.g. one per
   100-200 MB of records);
5. `pretraining_data.json` is written last, with the same fields as the one-process path.

The output depends only on the settings and the input files, never on the runner, the number of
workers or their scheduling. It is not byte-identical to the one-process output (which draws from one
random stream over the whole corpus), but statistically the same.

Random next sentences, against Google's script. Google's `create_pretraining_data.py` holds the whole
corpus of D documents in memory and draws the random "next" segment of NSP from any other document.
Here, as in NVIDIA's LDDL, documents are first shuffled over the whole corpus on a hashed key and the
draw is made within the partition: n = about `document_buffer` documents (default 1,000; the one-process
path draws from its shuffle buffer of the same size). Why that does not matter at scale:

- A partition is a uniform random sample of the corpus, so the document drawn is, as in Google's draw,
  a uniform random document other than the current one (the current one is never in its own pool).
  The random segment only has to come from another document; which one carries no signal.
- What changes is the reuse: a partition's ~`n * dupe_factor * k / 2` random segments (k instances
  per document and pass) all come from its n documents. A finished document leaves the pool (Google's
  pool keeps every document), so a draw sees n/2 documents on average, and two negatives of a partition
  share their source document with chance about 2/n (0.2% at n = 1,000) instead of 1/D (below 1e-6 for
  Wikipedia's 6 million articles). Each document is still drawn about `dupe_factor * k / 2` times on
  average (late ones of a partition more, early ones fewer, as in the one-process path's buffer), each
  time from a random sentence on.
- The last document of a partition has no other to draw from and gives only true continuations, as a
  corpus of one document does: 1 document in n, so next-sentence positives rise by about 50/n
  percentage points (0.05 points at n = 1,000).
- The partition count, not the draw, is what scales: ceil(D / n) partitions run on as many workers.
"""

from __future__ import annotations

import hashlib
import json
import math
import posixpath
import random
import time
from collections.abc import Iterator, Sequence

BEAM_EXTRA = "kbert[beam]"


def import_beam():
    """Imports `apache_beam`, or raises an ImportError that names the extra to install."""
    try:
        import apache_beam
    except ImportError as error:
        raise ImportError(
            f"--beam needs Apache Beam, an optional extra of kbert: pip install '{BEAM_EXTRA}' "
            f"({error})."
        ) from error
    return apache_beam


def stable_key(*parts: object) -> int:
    """A 64-bit key hashed from `parts`: the same in every process and Python (unlike `hash`)."""
    digest = hashlib.blake2b(repr(parts).encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest, "little")


class _ReadDocuments:
    """(file index, path) -> (document key, tokenized document) for each document of the file."""

    def __init__(self, corpus, tokenizer, language: str, seed: int) -> None:
        self.corpus, self.tokenizer, self.language, self.seed = corpus, tokenizer, language, seed
        self._tokenize = None

    def __getstate__(self) -> dict:
        # The tokenizer travels pickled (Keras pickles a layer whole, its vocabulary included); the
        # tokenize function is made again in each worker.
        return {**self.__dict__, "_tokenize": None}

    def __call__(self, element: tuple[int, str]) -> Iterator[tuple[int, list]]:
        from kbert.pretraining_data.tokenization import tokenize_documents, tokenizer_fn

        if self._tokenize is None:
            self._tokenize = tokenizer_fn(self.tokenizer)
        file_index, path = element
        # One file is one element: `TextCorpus` reads it whole, since a document spans many lines.
        documents = self.corpus._iter_file(path)  # noqa: SLF001 (the corpus' reader for one file)
        for index, document in enumerate(tokenize_documents(documents, self._tokenize, self.language)):
            yield stable_key(self.seed, file_index, index), document


class _PartitionRecords:
    """(partition, documents) -> (shard, (record key, serialized tf.Example)) for each instance."""

    def __init__(self, config, vocabulary, special_ids: tuple[int, int, int]) -> None:
        self.config, self.vocabulary = config, vocabulary  # a `MaskingVocabulary`
        self.cls_id, self.sep_id, self.pad_id = special_ids

    def __call__(self, element: tuple[int, Sequence[tuple[int, list]]]) -> Iterator[tuple[int, tuple[int, bytes]]]:
        from kbert.pretraining_data.static_masking import StaticMasker
        from kbert.pretraining_data.text_dataset import instance_arrays
        from kbert.pretraining_data.tfrecords import _example, static_features

        config = self.config
        partition, keyed = element
        documents = [document for _, document in sorted(keyed, key=lambda item: item[0])]
        instances = config.instances(documents, self.cls_id, self.sep_id, seed=stable_key(config.seed, partition),
                                     document_buffer=max(1, len(documents)), instance_buffer=1)
        masker = None
        if config.masking == "static":
            masker = StaticMasker(self.vocabulary, config.masked_lm_prob, config.predictions,
                                  config.whole_word_masking, seed=stable_key(config.seed + 1, partition),
                                  ngram=config.ngram)
        order = random.Random(stable_key(config.seed + 2, partition))
        for instance in instances:
            if masker is not None:
                features = static_features(instance, masker, config.sequence_length, config.predictions,
                                           self.pad_id)
            else:
                features = instance_arrays(instance, config.sequence_length, self.pad_id)
            key = order.getrandbits(64)
            yield key % config.num_shards, (key, _example(features))


def shard_name(index: int, num_shards: int) -> str:
    """`part-00003-of-00008.tfrecord`, the one-process path's shard names."""
    return f"part-{index:05d}-of-{num_shards:05d}.tfrecord"


def _write_shard(element: tuple[int, Sequence], output: str, num_shards: int) -> tuple[int, int]:
    """Writes one shard's records sorted by their random key; returns (shard, record count)."""
    import tensorflow as tf

    shard, values = element
    records = sorted(value for value in values if value is not None)  # (key, bytes): ties broken by bytes
    with tf.io.TFRecordWriter(posixpath.join(output, shard_name(shard, num_shards))) as writer:
        for _, serialized in records:
            writer.write(serialized)
    return shard, len(records)


def _write_metadata(counts: Sequence[tuple[int, int]], output: str, settings: dict, vocab_file: str) -> int:
    """Writes `pretraining_data.json` (last: a directory without it is unfinished); returns the count."""
    import tensorflow as tf

    from kbert.pretraining_data.shards import FORMAT, METADATA_FILE

    names = [shard_name(i, len(counts)) for i in range(len(counts))]
    records = dict(counts)
    metadata = {
        "format": FORMAT,
        "version": 1,
        **settings,
        "vocab_file": vocab_file,
        "num_instances": sum(records.values()),
        "shards": [{"file": name, "records": records[i],
                    "bytes": tf.io.gfile.stat(posixpath.join(output, name)).length}
                   for i, name in enumerate(names)],
    }
    with tf.io.gfile.GFile(posixpath.join(output, METADATA_FILE), "w") as f:
        f.write(json.dumps(metadata, indent=2) + "\n")
    return metadata["num_instances"]


def build_pipeline(pipeline, config, files: Sequence[str], tokenizer, vocab_file: str = "vocab.txt") -> None:
    """Adds the transforms that turn `files` into the shards and metadata of `config.out`; `tokenizer` is
    what `kbert.load_tokenizer` read from `config.vocab`, whose files are in `config.out` (`vocab_file`)."""
    import apache_beam as beam

    from kbert.pretraining_data.corpus import TextCorpus
    from kbert.pretraining_data.masking_vocabulary import MaskingVocabulary

    corpus = TextCorpus(list(files), layout=config.layout, encoding_errors=config.encoding_errors)
    special_ids = (tokenizer.cls_token_id, tokenizer.sep_token_id, tokenizer.pad_token_id)
    vocabulary = MaskingVocabulary.from_tokenizer(tokenizer)
    output, num_shards = config.out.rstrip("/"), config.num_shards
    documents = (
        pipeline
        | "Files" >> beam.Create(list(enumerate(files)))
        | "SpreadFiles" >> beam.Reshuffle()
        | "ReadAndTokenize" >> beam.FlatMap(_ReadDocuments(corpus, tokenizer, config.language, config.seed))
    )
    partitions = (
        documents
        | "CountDocuments" >> beam.combiners.Count.Globally()
        | "Partitions" >> beam.Map(lambda count: max(1, math.ceil(count / config.document_buffer)))
    )
    shard_markers = pipeline | "Shards" >> beam.Create([(shard, None) for shard in range(num_shards)])
    records = (
        documents
        | "Partition" >> beam.Map(lambda keyed, n: (keyed[0] % n, keyed), n=beam.pvalue.AsSingleton(partitions))
        | "GroupPartitions" >> beam.GroupByKey()
        | "Instances" >> beam.FlatMap(_PartitionRecords(config, vocabulary, special_ids))
    )
    settings = config.settings(vocabulary.size)
    _ = (
        (records, shard_markers)
        | "WithEveryShard" >> beam.Flatten()
        | "GroupShards" >> beam.GroupByKey()
        | "WriteShards" >> beam.Map(_write_shard, output=output, num_shards=num_shards)
        | "AllShards" >> beam.combiners.ToList()
        | "WriteMetadata" >> beam.Map(_write_metadata, output=output, settings=settings, vocab_file=vocab_file)
    )


def create_pretraining_data_beam(config, pipeline_args: Sequence[str] = ()) -> dict:
    """Runs `create_pretraining_data` as an Apache Beam pipeline on the runner that `pipeline_args` name.

    Args:
        config: CreatePretrainingDataConfig. Every setting of the one-process path; `document_buffer` is
            the size of a partition (the pool of random next sentences), text file inputs only.
        pipeline_args: Sequence[str]. Beam's pipeline options, unchanged, e.g. `["--runner=DirectRunner",
            "--direct_num_workers=2", "--direct_running_mode=multi_processing"]` (none: DirectRunner).

    Returns:
        The metadata written to `pretraining_data.json`, plus "seconds" (the wall time).

    Raises:
        ImportError: apache-beam is not installed (the message names the `kbert[beam]` extra).
        ValueError, FileNotFoundError: bad settings, a missing input or vocabulary, an empty corpus.

    Example:
        >>> config = CreatePretrainingDataConfig(input=["books/*.txt"], vocab="vocab.txt",
        ...                                      out="data", num_shards=4)  # doctest: +SKIP
        >>> create_pretraining_data_beam(config, ["--direct_num_workers=2"])["num_instances"]  # doctest: +SKIP
        52114
    """
    beam = import_beam()
    from apache_beam.options.pipeline_options import PipelineOptions
    import tensorflow as tf

    from kbert.pretraining_data.corpus import TFDS_PREFIX, expand_inputs
    from kbert.pretraining_data.masking_vocabulary import MaskingVocabulary
    from kbert.pretraining_data.shards import METADATA_FILE, copy_tokenizer_files
    from kbert.text import load_tokenizer

    config.validate()
    if not config.vocab or not config.out:
        raise ValueError("vocab and out are required.")
    inputs = [config.input] if isinstance(config.input, str) else list(config.input)
    if any(item.startswith(TFDS_PREFIX) for item in inputs):
        raise ValueError("--beam reads text files; a tfds: input runs without --beam.")
    tokenizer = load_tokenizer(config.vocab, lowercase=config.lowercase)
    MaskingVocabulary.from_tokenizer(tokenizer)  # MissingMaskTokenError (a ValueError) names the problem
    files = expand_inputs(inputs)
    start = time.perf_counter()
    output = config.out.rstrip("/")
    tf.io.gfile.makedirs(output)
    metadata_path = posixpath.join(output, METADATA_FILE)
    if tf.io.gfile.exists(metadata_path):  # an older run's, which would vouch for new shards
        tf.io.gfile.remove(metadata_path)
    vocab_file = copy_tokenizer_files(config.vocab, output)
    with beam.Pipeline(options=PipelineOptions(list(pipeline_args))) as pipeline:
        build_pipeline(pipeline, config, files, tokenizer, vocab_file)
    with tf.io.gfile.GFile(metadata_path) as f:
        metadata = json.load(f)
    if metadata["num_instances"] == 0:
        tf.io.gfile.remove(metadata_path)  # no finished output to vouch for
        raise ValueError(f"The corpus {inputs} gives no pretraining instance: it holds no text "
                         "(or only one-token sentences) after tokenization.")
    return {**metadata, "seconds": time.perf_counter() - start}
