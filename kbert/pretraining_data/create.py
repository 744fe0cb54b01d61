"""`create_pretraining_data`: a text corpus to sharded masked-LM + NSP/SOP TFRecords, in one call.

    config = CreatePretrainingDataConfig(input=["corpus/*.txt"], vocab="vocab.txt", out="data/seq128")
    metadata = create_pretraining_data(config)   # what `kbert create-pretraining-data` runs

The output directory holds the shards, a copy of the vocabulary and `pretraining_data.json` with every
setting, so `kbert pretrain --train DIR` needs no `--vocab`.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterator

import numpy as np

from kbert.pretraining_data.corpus import TFDS_PREFIX, TextCorpus
from kbert.pretraining_data.create_config import MASKINGS, CreatePretrainingDataConfig  # noqa: F401  (re-exported)
from kbert.pretraining_data.masking_vocabulary import MaskingVocabulary
from kbert.pretraining_data.static_masking import StaticMasker
from kbert.pretraining_data.text_dataset import instance_arrays
from kbert.pretraining_data.tfrecords import static_features, write_pretraining_tfrecords
from kbert.pretraining_data.tokenization import tokenize_documents, tokenizer_fn


def pretraining_records(config: CreatePretrainingDataConfig, tokenizer) -> Iterator[dict[str, np.ndarray]]:
    """The corpus as padded feature dicts: statically masked, or unmasked for dynamic masking.

    Args:
        config: CreatePretrainingDataConfig. The corpus and instance settings (`out` is not used).
        tokenizer: a tokenizer from `kbert.load_tokenizer` whose vocabulary has a mask token; its special
            ids (cls, sep, pad, mask) are the ones used.

    Returns:
        An iterator of `static_features` or `instance_arrays` dicts, ready for TFRecords or `tf.data`.

    Raises:
        ValueError: when the corpus gives no instance at all.
    """
    config.validate()
    vocabulary = MaskingVocabulary.from_tokenizer(tokenizer)  # MissingMaskTokenError (a ValueError) names it
    inputs = config.input
    if isinstance(inputs, str):
        inputs = [inputs]
    source = inputs[0] if len(inputs) == 1 and inputs[0].startswith(TFDS_PREFIX) else list(inputs)
    corpus = TextCorpus(source, layout=config.layout, tfds_split=config.tfds_split,
                        text_key=config.tfds_text_key, encoding_errors=config.encoding_errors)
    documents = tokenize_documents(corpus, tokenizer_fn(tokenizer), language=config.language)
    instances = config.instances(documents, tokenizer.cls_token_id, tokenizer.sep_token_id)
    first = next(instances, None)
    if first is None:
        raise ValueError(f"The corpus {list(inputs)} gives no pretraining instance: it holds no text "
                         "(or only one-token sentences) after tokenization.")
    instances = itertools.chain([first], instances)
    if config.masking == "static":
        masker = StaticMasker(vocabulary, config.masked_lm_prob, config.predictions, config.whole_word_masking,
                              seed=config.seed + 1, ngram=config.ngram)
        return (static_features(i, masker, config.sequence_length, config.predictions, tokenizer.pad_token_id)
                for i in instances)
    return (instance_arrays(i, config.sequence_length, tokenizer.pad_token_id) for i in instances)


def create_pretraining_data(config: CreatePretrainingDataConfig) -> dict:
    """Turns a text corpus into a directory of sharded pretraining TFRecords.

    Args:
        config: CreatePretrainingDataConfig. Every setting.

    Returns:
        The metadata written to `pretraining_data.json`, plus "seconds" (the wall time).

    Raises:
        ValueError, FileNotFoundError: bad settings, a missing input or vocabulary, an empty corpus.

    Example:
        >>> config = CreatePretrainingDataConfig(input=["books/*.txt"], vocab="vocab.txt",
        ...                                      out="data", dupe_factor=5)  # doctest: +SKIP
        >>> create_pretraining_data(config)["num_instances"]  # doctest: +SKIP
        52114
    """
    from kbert.text import load_tokenizer

    config.validate()
    if not config.vocab or not config.out:
        raise ValueError("vocab and out are required.")
    tokenizer = load_tokenizer(config.vocab, lowercase=config.lowercase)
    start = time.perf_counter()
    records = pretraining_records(config, tokenizer)
    metadata = write_pretraining_tfrecords(records, config.out, vocab_file=config.vocab,
                                           settings=config.settings(tokenizer.vocabulary_size()),
                                           num_shards=config.num_shards, seed=config.seed + 2)
    return {**metadata, "seconds": time.perf_counter() - start}
