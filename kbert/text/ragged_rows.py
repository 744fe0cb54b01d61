"""Row bookkeeping for batches held as flat values plus row lengths, in ops that TFLite also runs."""

from __future__ import annotations

import tensorflow as tf


def sum_by_row(piece_counts: tf.Tensor, word_row_splits: tf.Tensor) -> tf.Tensor:
    """Pieces per text: the per-word piece counts summed over each text's words."""
    cum = tf.concat([tf.zeros([1], piece_counts.dtype), tf.cumsum(piece_counts)], 0)
    return tf.gather(cum, word_row_splits[1:]) - tf.gather(cum, word_row_splits[:-1])


def where_true(mask: tf.Tensor) -> tf.Tensor:
    """Positions of the True entries of a 1-D mask."""
    return tf.where(mask)[:, 0]


def restore_order(groups: tuple, order: tf.Tensor) -> tuple:
    """Concatenates each group of ragged row blocks and puts row `order[i]` back at row `i`.

    Dense ops only (a ragged `tf.gather` would lower to RaggedGather, which TFLite cannot run).
    """
    inverse = tf.math.invert_permutation(order)
    joined = [tf.concat(list(group), 0) for group in groups]
    splits = joined[0].row_splits
    lengths = tf.gather(splits[1:] - splits[:-1], inverse)
    new_splits = tf.concat([tf.zeros([1], splits.dtype), tf.cumsum(lengths)], 0)
    row = tf.repeat(tf.range(tf.size(lengths, out_type=splits.dtype)), lengths)
    source = tf.gather(tf.gather(splits, inverse), row) + tf.range(new_splits[-1]) - tf.gather(new_splits, row)
    return tuple(tf.RaggedTensor.from_row_splits(tf.gather(rt.flat_values, source), new_splits, validate=False)
                 for rt in joined)
