"""`create_pretraining_data`: a text corpus to sharded masked-LM + NSP/SOP TFRecords, in one call.

    config = CreatePretrainingDataConfig(inputs=["corpus/*.txt"], vocab="vocab.txt", output="data/seq128")
    metadata = create_pretraining_data(config)   # what `kbert create-pretraining-data` runs

The output directory holds the shards, a copy of the vocabulary and `pretraining_data.json` with every
setting, so `kbert pretrain --train-data DIR` needs no `--vocab`.
"""

from __future__ import annotations

import dataclasses
import itertools
import time
from collections.abc import Iterator, Sequence

import numpy as np

from kbert.constants import OBJECTIVES
from kbert.pretraining_data.corpus import LAYOUTS, TFDS_PREFIX, TextCorpus
from kbert.pretraining_data.instances import create_pretraining_instances
from kbert.pretraining_data.static_masking import StaticMasker, mask_token_id
from kbert.pretraining_data.text_dataset import instance_arrays
from kbert.pretraining_data.tfrecords import static_features, write_pretraining_tfrecords
from kbert.pretraining_data.tokenization import tokenize_documents, tokenizer_fn
from kbert.text.text_files import DEFAULT_ENCODING_ERRORS, ENCODING_ERRORS

MASKINGS = ("static", "dynamic")


@dataclasses.dataclass
class CreatePretrainingDataConfig:
    """Every setting of `create_pretraining_data`; each is a `kbert create-pretraining-data` flag.

    Names follow Google's `create_pretraining_data.py` (dashed on the command line).

    Attributes:
        inputs: Sequence[str]. Globs of UTF-8 text files, or one "tfds:NAME[:SPLIT]".
        vocab: str. WordPiece vocab.txt; must contain [MASK].
        output: str. Output directory of the shards.
        max_seq_length: int. Length of a packed instance.
        max_predictions_per_seq: int | None. Default: round(max_seq_length * masked_lm_prob).
        masked_lm_prob: float. Fraction of tokens to predict.
        short_seq_prob: float. Probability of a shorter instance.
        dupe_factor: int. Instances made from each document, with different chunks and masks.
        objective: str. "nsp", "sop" or "none".
        whole_word_masking: bool. Mask all pieces of a word together (zh: words from jieba).
        language: str. "en", or "zh" to segment words with jieba.
        lowercase: bool. Uncased tokenization.
        layout: str. "sentences", "documents" or "paragraphs" (see `TextCorpus`).
        masking: str. "static": masks in the records; "dynamic": masked afresh each epoch when read.
        num_shards: int. Output shards.
        seed: int. Seed of instances (static masks: seed + 1; the order of the written records: seed + 2).
        document_buffer: int. Documents held at once (shuffle window and random-next pool).
        tfds_split: str. Split of a tfds input.
        tfds_text_key: str. Text feature of a tfds input.
        encoding_errors: str. "strict", "replace" or "ignore" for bytes that are not UTF-8.
    """

    inputs: Sequence[str] = ()
    vocab: str = ""
    output: str = ""
    max_seq_length: int = 128
    max_predictions_per_seq: int | None = None
    masked_lm_prob: float = 0.15
    short_seq_prob: float = 0.1
    dupe_factor: int = 10
    objective: str = "nsp"
    whole_word_masking: bool = False
    language: str = "en"
    lowercase: bool = True
    layout: str = "sentences"
    masking: str = "static"
    num_shards: int = 1
    seed: int = 12345
    document_buffer: int = 1000
    tfds_split: str = "train"
    tfds_text_key: str = "text"
    encoding_errors: str = DEFAULT_ENCODING_ERRORS

    @property
    def predictions(self) -> int:
        """`max_predictions_per_seq`, or its default `round(max_seq_length * masked_lm_prob)`."""
        return self.max_predictions_per_seq or max(1, int(round(self.max_seq_length * self.masked_lm_prob)))

    def validate(self) -> None:
        """Raises a ValueError naming the first setting out of range."""
        choices = {"objective": OBJECTIVES, "layout": LAYOUTS, "masking": MASKINGS,
                   "language": ("en", "zh"), "encoding_errors": ENCODING_ERRORS}
        for name, allowed in choices.items():
            if getattr(self, name) not in allowed:
                raise ValueError(f"{name} must be one of {allowed}, got {getattr(self, name)!r}.")
        if not self.inputs:
            raise ValueError("inputs is required (text file globs or tfds:NAME).")
        if self.max_seq_length < 5:
            raise ValueError(f"max_seq_length must be >= 5, got {self.max_seq_length}.")
        if self.num_shards < 1 or self.dupe_factor < 1:
            raise ValueError("num_shards and dupe_factor must be >= 1.")

    def settings(self, vocab_size: int) -> dict:
        """The settings recorded in `pretraining_data.json`."""
        recorded = dataclasses.asdict(self)
        for name in ("vocab", "output", "num_shards", "document_buffer", "tfds_split", "tfds_text_key"):
            recorded.pop(name)
        recorded.update(max_predictions_per_seq=self.predictions, vocab_size=vocab_size,
                        inputs=list(recorded["inputs"]))
        return recorded


def pretraining_records(config: CreatePretrainingDataConfig, tokenizer) -> Iterator[dict[str, np.ndarray]]:
    """The corpus as padded feature dicts: statically masked, or unmasked for dynamic masking.

    Args:
        config: CreatePretrainingDataConfig. The corpus and instance settings (`output` is not used).
        tokenizer: a `kbert.text.BertTokenizer` whose vocabulary holds `[MASK]`.

    Returns:
        An iterator of `static_features` or `instance_arrays` dicts, ready for TFRecords or `tf.data`.

    Raises:
        ValueError: when the corpus gives no instance at all.
    """
    config.validate()
    vocabulary = list(tokenizer.vocabulary)
    mask_token_id(vocabulary)  # MissingMaskTokenError (a ValueError) names the problem
    inputs = config.inputs
    if isinstance(inputs, str):
        inputs = [inputs]
    source = inputs[0] if len(inputs) == 1 and inputs[0].startswith(TFDS_PREFIX) else list(inputs)
    corpus = TextCorpus(source, layout=config.layout, tfds_split=config.tfds_split,
                        text_key=config.tfds_text_key, encoding_errors=config.encoding_errors)
    documents = tokenize_documents(corpus, tokenizer_fn(tokenizer), language=config.language)
    instances = create_pretraining_instances(
        documents, max_seq_length=config.max_seq_length, cls_id=tokenizer.cls_token_id,
        sep_id=tokenizer.sep_token_id, objective=config.objective, short_seq_prob=config.short_seq_prob,
        dupe_factor=config.dupe_factor, seed=config.seed, document_buffer=config.document_buffer)
    first = next(instances, None)
    if first is None:
        raise ValueError(f"The corpus {list(inputs)} gives no pretraining instance: it holds no text "
                         "(or only one-token sentences) after tokenization.")
    instances = itertools.chain([first], instances)
    if config.masking == "static":
        masker = StaticMasker(vocabulary, config.masked_lm_prob, config.predictions, config.whole_word_masking,
                              seed=config.seed + 1)
        return (static_features(i, masker, config.max_seq_length, config.predictions, tokenizer.pad_token_id)
                for i in instances)
    return (instance_arrays(i, config.max_seq_length, tokenizer.pad_token_id) for i in instances)


def create_pretraining_data(config: CreatePretrainingDataConfig) -> dict:
    """Turns a text corpus into a directory of sharded pretraining TFRecords.

    Args:
        config: CreatePretrainingDataConfig. Every setting.

    Returns:
        The metadata written to `pretraining_data.json`, plus "seconds" (the wall time).

    Raises:
        ValueError, FileNotFoundError: bad settings, a missing input or vocabulary, an empty corpus.

    Example:
        >>> config = CreatePretrainingDataConfig(inputs=["books/*.txt"], vocab="vocab.txt",
        ...                                      output="data", dupe_factor=5)  # doctest: +SKIP
        >>> create_pretraining_data(config)["num_instances"]  # doctest: +SKIP
        52114
    """
    from kbert.text.bert_tokenizer import BertTokenizer, read_vocabulary

    config.validate()
    if not config.vocab or not config.output:
        raise ValueError("vocab and output are required.")
    vocabulary = read_vocabulary(config.vocab)
    tokenizer = BertTokenizer(vocabulary, lowercase=config.lowercase)
    start = time.perf_counter()
    records = pretraining_records(config, tokenizer)
    metadata = write_pretraining_tfrecords(records, config.output, vocab_file=config.vocab,
                                           settings=config.settings(len(vocabulary)), num_shards=config.num_shards,
                                           seed=config.seed + 2)
    return {**metadata, "seconds": time.perf_counter() - start}
