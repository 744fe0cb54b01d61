"""Text pairs (and hard negatives) -> a batched tf.data pipeline whose rows keep each example's texts together.

An example's texts are consecutive rows of one batch: `[anchor_0, positive_0, (negative_0,) anchor_1, ...]`,
each packed alone (`[CLS] text [SEP]`). A batch of `b` examples is then `b * len(columns)` rows, which
`tf.distribute` splits among replicas at example boundaries (when the replicas divide `b`), and
`kbert.tasks.embedding_loss.MultipleNegativesRankingLoss` reads them back by groups.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import tensorflow as tf

from kbert.data_pipeline import (as_written, check_fixed_padding, default_pad_multiple, index_batches, pad_to_multiple,
                                 static_batch)
from kbert.tasks.example import Example
from kbert.text.bert_preprocessor import BertPreprocessor


def embedding_dataset(
    examples: Sequence[Example],
    preprocessor: BertPreprocessor,
    columns: Sequence[str] = ("text", "text_pair"),
    *,
    batch_size: int = 32,
    shuffle: bool = False,
    seed: int | None = None,
    with_labels: bool = True,
    full_batches: bool = False,
    group_by_length: bool = True,
    pad_multiple: int | None = None,
    drop_remainder: bool = False,
) -> tf.data.Dataset:
    """A batched `tf.data.Dataset` of `(inputs, roles)` (or `inputs` alone) for `BertSentenceEmbedder`.

    Args:
        examples: sequence of dicts holding every key of `columns` (strings).
        preprocessor: `kbert.BertPreprocessor`; each text is packed alone. With `padding="dynamic"` a batch
            is padded to its longest row, rounded up to `pad_multiple`.
        columns: the example keys that make each example's rows, in order (anchor, positive, negatives).
        batch_size: int. Examples per batch (`batch_size * len(columns)` rows).
        shuffle: bool. Reshuffle the examples every epoch.
        seed: optional int. Shuffle seed.
        with_labels: bool. Also yield each row's role, its place in `columns` (what Keras hands the loss).
        full_batches: bool. Only batches of `batch_size` examples (an epoch is `len(examples) // batch_size`
            batches): in-batch negatives then always number the same, and every replica gets whole examples.
        group_by_length: bool. With `shuffle`, batch examples of similar token counts together
            (`kbert.data_pipeline.index_batches`); False: plain random batches.
        pad_multiple: int or None. Dynamic padding rounds up to this multiple; None: the host's default
            (`kbert.data_pipeline.default_pad_multiple`).
        drop_remainder: bool. Fixed shapes for a compiled step (needs `padding="fixed"`): full batches,
            rows `(batch_size * len(columns), sequence_length)` static in the `element_spec`, no grouping.

    Returns:
        `tf.data.Dataset` of ({"token_ids", "segment_ids", "padding_mask"}, roles), or the inputs alone.

    Example:
    >>> tok = kbert.BertTokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "a", "cat", "dog"])  # doctest: +SKIP
    >>> data = embedding_dataset([{"text": "a cat", "text_pair": "a dog"}],
    ...                          kbert.BertPreprocessor(tok, 8))  # doctest: +SKIP
    >>> next(iter(data))[1].numpy().tolist()  # doctest: +SKIP
    [0, 1]
    """
    if not examples:
        raise ValueError("no examples")
    check_fixed_padding(preprocessor.padding, drop_remainder)
    full_batches = full_batches or drop_remainder
    if full_batches and len(examples) < batch_size:
        raise ValueError(f"{len(examples)} examples are fewer than one batch of {batch_size}: in-batch negatives "
                         f"train on full batches (use a smaller batch size)")
    group_by_length = group_by_length and not drop_remainder
    pad_multiple = default_pad_multiple() if pad_multiple is None else pad_multiple
    width = len(columns)
    texts = tf.constant([[str(example[column]) for column in columns] for example in examples])  # (n, width)
    lengths = None
    if shuffle and group_by_length:  # the tokenizer runs once more, over all texts, for the token counts
        counts = preprocessor.tokenizer.tokenize(tf.reshape(texts, [-1])).row_lengths().numpy()
        lengths = np.max(counts.reshape(len(examples), width), axis=1)  # a batch pads to its longest row
    batches = index_batches(len(examples), batch_size, shuffle=shuffle, seed=seed, lengths=lengths,
                            drop_remainder=full_batches and lengths is None)
    if full_batches and lengths is not None:  # grouped batches: the short one may be anywhere in the epoch
        batches = batches.filter(lambda index: tf.shape(index)[0] == batch_size).apply(
            tf.data.experimental.assert_cardinality(len(examples) // batch_size))

    @tf.autograph.experimental.do_not_convert  # no control flow on tensors: skip AutoGraph's rewrite
    def pack(index):
        rows = tf.reshape(tf.gather(texts, index), [-1])
        inputs = preprocessor(rows)
        if preprocessor.padding == "dynamic":
            inputs = pad_to_multiple(inputs, pad_multiple, preprocessor.sequence_length,
                                     fill={"token_ids": preprocessor.tokenizer.pad_token_id})
        out = (inputs, tf.tile(tf.range(width), tf.shape(index)[:1])) if with_labels else inputs
        return static_batch(out, batch_size * width, preprocessor.sequence_length) if drop_remainder else out

    return as_written(batches.map(pack, num_parallel_calls=tf.data.AUTOTUNE).prefetch(tf.data.AUTOTUNE))
