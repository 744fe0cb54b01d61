"""Unmasked pretraining instances as `tf.data`, and raw text to masked batches end to end."""

from __future__ import annotations

from collections.abc import Callable, Iterable

import numpy as np
import tensorflow as tf

from kbert.data_pipeline import without_autotune
from kbert.pretraining_data.create_config import CreatePretrainingDataConfig
from kbert.pretraining_data.dynamic_masking import DynamicMasker
from kbert.pretraining_data.masking_vocabulary import MaskingVocabulary


def unmasked_feature_spec(sequence_length: int) -> dict[str, tf.TensorSpec]:
    """The unmasked per-instance features that `DynamicMasker` consumes."""
    seq = tf.TensorSpec([sequence_length], tf.int32)
    return {
        "token_ids": seq,
        "segment_ids": seq,
        "padding_mask": tf.TensorSpec([sequence_length], tf.bool),
        "word_starts": tf.TensorSpec([sequence_length], tf.bool),
        "next_sentence_label": tf.TensorSpec([], tf.int32),
    }


def instance_arrays(instance, sequence_length: int, pad_id: int = 0) -> dict[str, np.ndarray]:
    """A `PretrainingInstance` as padded numpy arrays of `unmasked_feature_spec`."""
    n = len(instance.token_ids)
    if n > sequence_length:
        raise ValueError(f"instance of {n} tokens is longer than sequence_length={sequence_length}.")
    pad = sequence_length - n
    return {
        "token_ids": np.array(instance.token_ids + [pad_id] * pad, np.int32),
        "segment_ids": np.array(instance.segment_ids + [0] * pad, np.int32),
        "padding_mask": np.array([True] * n + [False] * pad),
        "word_starts": np.array(instance.word_starts + [True] * pad),
        "next_sentence_label": np.int32(instance.next_sentence_label),
    }


def instances_dataset(
    make_instances: Callable[[], Iterable], sequence_length: int, pad_id: int = 0
) -> tf.data.Dataset:
    """An unbatched dataset of unmasked instances from a Python generator function (re-run each epoch)."""

    def generate():
        for instance in make_instances():
            yield instance_arrays(instance, sequence_length, pad_id)

    return tf.data.Dataset.from_generator(generate, output_signature=unmasked_feature_spec(sequence_length))


def text_pretraining_dataset(
    config: CreatePretrainingDataConfig,
    tokenizer,
    *,
    batch_size: int,
    shuffle_buffer: int = 10000,
    drop_remainder: bool = True,
) -> tf.data.Dataset:
    """Raw text to masked, batched pretraining features, end to end, with fresh masks every epoch.

    Each epoch re-reads the corpus and rebuilds the instances in Python (streaming; the same instances
    every epoch, from `config.seed`), and draws new masks with `DynamicMasker`.

    Args:
        config: CreatePretrainingDataConfig. The corpus (`input`: file glob(s) or "tfds:NAME") and the
            instance and masking settings (`sequence_length`, `max_predictions_per_seq`, `masked_lm_prob`,
            `objective`, `packing`, `ngram`, `whole_word_masking`, `language`, `layout`, `short_seq_prob`,
            `dupe_factor`, `encoding_errors`, `seed`); `vocab`, `out`, `masking` and the sharding fields are
            not used.
        tokenizer: a tokenizer from `kbert.load_tokenizer` (its vocabulary must have a mask token).
        batch_size: int. Batch size.
        shuffle_buffer: int. Instances shuffled together.
        drop_remainder: bool. Drop the last partial batch (static shapes for XLA and TPU).

    Returns:
        A `tf.data.Dataset` of `pretraining_feature_spec(sequence_length, P, (batch,))` dicts.

    Example:
        >>> config = CreatePretrainingDataConfig(input=["books/*.txt"], sequence_length=128, dupe_factor=1)
        >>> dataset = text_pretraining_dataset(config, tokenizer, batch_size=32)  # doctest: +SKIP
    """
    from kbert.pretraining_data.corpus import TFDS_PREFIX, TextCorpus
    from kbert.pretraining_data.tokenization import tokenize_documents, tokenizer_fn

    config.validate()
    masker = DynamicMasker(MaskingVocabulary.from_tokenizer(tokenizer), config.predictions, config.masked_lm_prob,
                           config.whole_word_masking, seed=config.seed, ngram=config.ngram)
    inputs = [config.input] if isinstance(config.input, str) else list(config.input)
    source = inputs[0] if len(inputs) == 1 and inputs[0].startswith(TFDS_PREFIX) else inputs
    corpus = TextCorpus(source, layout=config.layout, tfds_split=config.tfds_split,
                        text_key=config.tfds_text_key, encoding_errors=config.encoding_errors)
    tokenize = tokenizer_fn(tokenizer)
    length = config.sequence_length

    def make_instances():
        documents = tokenize_documents(corpus, tokenize, language=config.language)
        return config.instances(documents, tokenizer.cls_token_id, tokenizer.sep_token_id,
                                instance_buffer=shuffle_buffer)

    dataset = instances_dataset(make_instances, length, tokenizer.pad_token_id)
    dataset = dataset.batch(batch_size, drop_remainder=drop_remainder)
    return without_autotune(masker.apply(dataset).prefetch(tf.data.AUTOTUNE))
