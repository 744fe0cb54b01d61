"""Classification / regression examples -> a batched tf.data pipeline of (inputs, labels).

Tokenization and packing run inside `Dataset.map` with `kbert.BertPreprocessor`, one call per batch
(batching first lets the ragged tokenizer ops run once per batch instead of once per example).
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import tensorflow as tf

from kbert.data_pipeline import (as_written, check_fixed_padding, default_pad_multiple, index_batches, pad_to_multiple,
                                 static_batch)
from kbert.tasks.example import Example
from kbert.text.bert_preprocessor import BertPreprocessor


def encode_labels(
    examples: Sequence[Example], label_names: Sequence[str] | None, regression: bool = False
) -> np.ndarray:
    """Label ids (int32) from label names, or float32 scores for regression.

    Args:
        examples: sequence of {"label": ...} dicts (as `kbert.tasks.classification.read_classification` returns).
        label_names: the label vocabulary in id order (ignored for regression).
        regression: bool. Labels are numbers.

    Returns:
        np.ndarray of shape (len(examples),).

    Raises:
        ValueError naming the example index and label when a label is missing or not in the vocabulary.

    Example:
    >>> encode_labels([{"label": "pos"}, {"label": "neg"}], ["neg", "pos"]).tolist()
    [1, 0]
    """
    if regression:
        values = []
        for index, example in enumerate(examples):
            try:
                values.append(float(example["label"]))
            except (TypeError, ValueError):
                raise ValueError(f"example {index}: label {example['label']!r} is not a number") from None
        return np.asarray(values, np.float32)
    if not label_names:
        raise ValueError("a classification task needs label names")
    index_of = {str(name): i for i, name in enumerate(label_names)}
    ids = []
    for index, example in enumerate(examples):
        label = example.get("label")
        if label is None or str(label) not in index_of:
            raise ValueError(
                f"example {index}: label {label!r} is not one of the model's labels {list(label_names)}"
            )
        ids.append(index_of[str(label)])
    return np.asarray(ids, np.int32)


def classification_dataset(
    examples: Sequence[Example],
    preprocessor: BertPreprocessor,
    label_names: Sequence[str] | None = None,
    *,
    regression: bool = False,
    batch_size: int = 32,
    shuffle: bool = False,
    seed: int | None = None,
    with_labels: bool = True,
    pad_multiple: int | None = None,
    group_by_length: bool = True,
    drop_remainder: bool = False,
) -> tf.data.Dataset:
    """A batched `tf.data.Dataset` of `(inputs, labels)` (or `inputs` alone) for `BertClassifier`.

    Args:
        examples: sequence of {"text", "text_pair", "label"} dicts.
        preprocessor: `kbert.BertPreprocessor`; with `padding="dynamic"` each batch is padded to its
            longest row, rounded up to `pad_multiple`.
        label_names: label vocabulary in id order (classification).
        regression: bool. Float labels.
        batch_size: int. Examples per batch (the last batch may be smaller).
        shuffle: bool. Reshuffle the examples every epoch.
        seed: optional int. Shuffle seed.
        group_by_length: bool. With `shuffle`, batch rows of similar token counts together
            (`kbert.data_pipeline.index_batches`), each class in its share per batch (regression: by
            length alone); False: plain random batches.
        with_labels: bool. False yields inputs only (prediction on unlabelled data).
        pad_multiple: int or None. Dynamic padding rounds the length up to this multiple; None: 1 on a
            CPU-only host, 16 with an accelerator (`kbert.data_pipeline.default_pad_multiple`).
        drop_remainder: bool. Fixed shapes for a compiled step (needs `padding="fixed"`): the short last
            batch dropped, features `(batch_size, sequence_length)` and labels `(batch_size,)` static in
            the `element_spec`, no grouping by length.

    Returns:
        `tf.data.Dataset` of ({"token_ids", "segment_ids", "padding_mask"}, labels).

    Example:
    >>> tok = kbert.BertTokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "good", "bad"])  # doctest: +SKIP
    >>> ds = classification_dataset([{"text": "good", "text_pair": None, "label": "1"}],
    ...                             kbert.BertPreprocessor(tok, 8), ["0", "1"])  # doctest: +SKIP
    """
    if not examples:
        raise ValueError("no examples")
    check_fixed_padding(preprocessor.padding, drop_remainder)
    group_by_length = group_by_length and not drop_remainder  # every row is padded to the full length anyway
    pad_multiple = default_pad_multiple() if pad_multiple is None else pad_multiple
    texts = [str(e["text"]) for e in examples]
    pairs = [e.get("text_pair") for e in examples]
    columns = {"text": tf.constant(texts)}
    if any(p is not None for p in pairs):
        columns["text_pair"] = tf.constant(["" if p is None else str(p) for p in pairs])
    label_ids = encode_labels(examples, label_names, regression) if with_labels else None
    labels = None if label_ids is None else tf.constant(label_ids)
    lengths = strata = None
    if shuffle and group_by_length:  # the tokenizer runs once more, over all texts, for the token counts
        lengths = sum(preprocessor.tokenizer.tokenize(column).row_lengths().numpy() for column in columns.values())
        # Where length follows the label, length-sorted batches would be skewed in their labels.
        strata = None if regression or label_ids is None else label_ids
    batches = index_batches(len(examples), batch_size, shuffle=shuffle, seed=seed, lengths=lengths, strata=strata,
                            drop_remainder=drop_remainder)

    @tf.autograph.experimental.do_not_convert  # no control flow on tensors: skip AutoGraph's rewrite (about 1 s)
    def pack(index):
        segments = tuple(tf.gather(column, index) for column in columns.values())
        inputs = preprocessor(segments if len(segments) == 2 else segments[0])
        if preprocessor.padding == "dynamic":
            inputs = pad_to_multiple(inputs, pad_multiple, preprocessor.sequence_length,
                                     fill={"token_ids": preprocessor.tokenizer.pad_token_id})
        out = inputs if labels is None else (inputs, tf.gather(labels, index))
        return static_batch(out, batch_size, preprocessor.sequence_length) if drop_remainder else out

    return as_written(batches.map(pack, num_parallel_calls=tf.data.AUTOTUNE).prefetch(tf.data.AUTOTUNE))
