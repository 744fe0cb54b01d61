"""Unmasked pretraining instances as `tf.data`, and raw text to masked batches end to end."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

import numpy as np
import tensorflow as tf

from kbert.data_pipeline import without_autotune
from kbert.pretraining_data.dynamic_masking import DynamicMasker
from kbert.text.text_files import DEFAULT_ENCODING_ERRORS


def unmasked_feature_spec(max_seq_length: int) -> dict[str, tf.TensorSpec]:
    """The unmasked per-instance features that `DynamicMasker` consumes."""
    seq = tf.TensorSpec([max_seq_length], tf.int32)
    return {
        "token_ids": seq,
        "segment_ids": seq,
        "padding_mask": tf.TensorSpec([max_seq_length], tf.bool),
        "word_starts": tf.TensorSpec([max_seq_length], tf.bool),
        "next_sentence_label": tf.TensorSpec([], tf.int32),
    }


def instance_arrays(instance, max_seq_length: int, pad_id: int = 0) -> dict[str, np.ndarray]:
    """A `PretrainingInstance` as padded numpy arrays of `unmasked_feature_spec`."""
    n = len(instance.token_ids)
    if n > max_seq_length:
        raise ValueError(f"instance of {n} tokens is longer than max_seq_length={max_seq_length}.")
    pad = max_seq_length - n
    return {
        "token_ids": np.array(instance.token_ids + [pad_id] * pad, np.int32),
        "segment_ids": np.array(instance.segment_ids + [0] * pad, np.int32),
        "padding_mask": np.array([True] * n + [False] * pad),
        "word_starts": np.array(instance.word_starts + [True] * pad),
        "next_sentence_label": np.int32(instance.next_sentence_label),
    }


def instances_dataset(
    make_instances: Callable[[], Iterable], max_seq_length: int, pad_id: int = 0
) -> tf.data.Dataset:
    """An unbatched dataset of unmasked instances from a Python generator function (re-run each epoch)."""

    def generate():
        for instance in make_instances():
            yield instance_arrays(instance, max_seq_length, pad_id)

    return tf.data.Dataset.from_generator(generate, output_signature=unmasked_feature_spec(max_seq_length))


def text_pretraining_dataset(
    inputs: str | Sequence[str],
    tokenizer,
    *,
    max_seq_length: int,
    batch_size: int,
    max_predictions_per_seq: int | None = None,
    masked_lm_prob: float = 0.15,
    objective: str = "nsp",
    whole_word: bool = False,
    language: str = "en",
    layout: str = "sentences",
    short_seq_prob: float = 0.1,
    dupe_factor: int = 1,
    encoding_errors: str = DEFAULT_ENCODING_ERRORS,
    seed: int | None = None,
    shuffle_buffer: int = 10000,
    drop_remainder: bool = True,
) -> tf.data.Dataset:
    """Raw text to masked, batched pretraining features, end to end, with fresh masks every epoch.

    Each epoch re-reads the corpus and rebuilds the instances in Python (streaming; the same instances
    every epoch when `seed` is set), and draws new masks with `DynamicMasker`.

    Args:
        inputs: str | Sequence[str]. File glob(s) or "tfds:NAME" (see `kbert.pretraining_data.TextCorpus`).
        tokenizer: a `kbert.text.BertTokenizer` (its vocabulary must hold `[MASK]`).
        max_seq_length: int. Sequence length.
        batch_size: int. Batch size.
        max_predictions_per_seq: int | None. Defaults to `round(max_seq_length * masked_lm_prob)`.
        masked_lm_prob, objective, whole_word, language, layout, short_seq_prob, dupe_factor,
            encoding_errors: as in `CreatePretrainingDataConfig`.
        seed: int | None. Seed of instance creation and masks.
        shuffle_buffer: int. Instances shuffled together.
        drop_remainder: bool. Drop the last partial batch (static shapes for XLA and TPU).

    Returns:
        A `tf.data.Dataset` of `pretraining_feature_spec(max_seq_length, P, (batch,))` dicts.
    """
    from kbert.pretraining_data.corpus import TextCorpus
    from kbert.pretraining_data.instances import create_pretraining_instances
    from kbert.pretraining_data.tokenization import tokenize_documents, tokenizer_fn

    vocabulary = list(tokenizer.vocabulary)
    preds = max_predictions_per_seq or max(1, int(round(max_seq_length * masked_lm_prob)))
    masker = DynamicMasker(vocabulary, preds, masked_lm_prob, whole_word, seed=seed)
    corpus = TextCorpus(inputs, layout=layout, encoding_errors=encoding_errors)
    tokenize = tokenizer_fn(tokenizer)

    def make_instances():
        documents = tokenize_documents(corpus, tokenize, language=language)
        return create_pretraining_instances(
            documents, max_seq_length=max_seq_length, cls_id=tokenizer.cls_token_id,
            sep_id=tokenizer.sep_token_id, objective=objective, short_seq_prob=short_seq_prob,
            dupe_factor=dupe_factor, seed=seed, instance_buffer=shuffle_buffer)

    dataset = instances_dataset(make_instances, max_seq_length, tokenizer.pad_token_id)
    dataset = dataset.batch(batch_size, drop_remainder=drop_remainder)
    return without_autotune(masker.apply(dataset).prefetch(tf.data.AUTOTUNE))
