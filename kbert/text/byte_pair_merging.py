"""Byte-pair merging of many words at once in TensorFlow ops (the loop of `ByteLevelBpeTokenizer`).

Written here because keras-hub's `BytePairTokenizer` gives no offsets, splits white space unlike HF's
RoBERTa tokenizer and merges strings through a mutable cache (docs/investigations/byte-level-bpe.md);
this loop works on integer ids with static tables:

- `pair_table`: `left * (sentinel + 1) + right` -> `rank << 32 | merged id` (int64), one entry per rule;
- the words are laid out flat, each after a sentinel id (the vocabulary size), so no pair spans two
  words and one segment-min per step finds each word's lowest-ranked pair.

Each step merges, in every word at once, all occurrences of that word's lowest-ranked pair (left to
right where they overlap, as in "aaa"). For learned merges (checked by `byte_level_vocab.merge_table`)
that is the same result as merging one pair at a time.
"""

from __future__ import annotations

import tensorflow as tf

from kbert.text.ragged_rows import row_ids, splits_from_lengths

NO_RULE = (1 << 63) - 1
ID_BITS = 32


def pack_rule(rank: int, merged: int) -> int:
    """The value `pair_table` holds for a rule."""
    return (rank << ID_BITS) | merged


def _first_of_overlaps(chosen: tf.Tensor) -> tf.Tensor:
    """Of each run of adjacent chosen pairs (same rule over a repeated token), every other one from the
    left: the pairs that merge ("aaa" -> "aa" "a")."""
    index = tf.range(tf.shape(chosen, out_type=tf.int64)[0])
    starts = chosen & ~tf.concat([[False], chosen[:-1]], 0)
    start_of = tf.concat([[0], tf.where(starts)[:, 0]], 0)
    offset = index - tf.gather(start_of, tf.cumsum(tf.cast(starts, tf.int64)))
    return chosen & tf.equal(offset % 2, 0)


def _merge_step(symbols, words, pair_table, sentinel: int):
    """One merge of each word's lowest-ranked pair; `words` is the (sorted) word of each symbol."""
    left = symbols[:-1]
    value = pair_table.lookup(left * (sentinel + 1) + symbols[1:])
    pair_word = words[:-1]
    lowest = tf.math.segment_min(value, pair_word)
    chosen = (value < NO_RULE) & tf.equal(value, tf.gather(lowest, pair_word))
    merge = tf.cond(tf.reduce_any(chosen[1:] & chosen[:-1]), lambda: _first_of_overlaps(chosen), lambda: chosen)
    merged = tf.concat([tf.where(merge, tf.bitwise.bitwise_and(value, (1 << ID_BITS) - 1), left), symbols[-1:]], 0)
    keep = tf.where(tf.concat([[True], ~merge], 0))[:, 0]
    return tf.gather(merged, keep), tf.gather(words, keep)


def merge_words(symbols: tf.RaggedTensor, pair_table, sentinel: int, steps_per_check: int = 2):
    """Merges the symbol ids of each word until no rule applies.

    Args:
        symbols: int64 RaggedTensor `[words, None]`: each word's starting ids (one per byte).
        pair_table: `tf.lookup.StaticHashTable` int64 -> int64 as described in the module docstring.
        sentinel: int. an id above every token id (the vocabulary size).
        steps_per_check: int. merge steps between two checks for progress (fewer loop turns).

    Returns:
        (ids, counts): int64 ids of all words, word after word, and the number of ids of each word.

    Example:
    >>> keys = tf.constant([1 * 6 + 2, 3 * 6 + 3], tf.int64)
    >>> values = tf.constant([pack_rule(0, 3), pack_rule(1, 4)], tf.int64)
    >>> table = tf.lookup.StaticHashTable(tf.lookup.KeyValueTensorInitializer(keys, values), NO_RULE)
    >>> ids, counts = merge_words(tf.ragged.constant([[1, 2, 1, 2], [2, 1]], tf.int64), table, sentinel=5)
    >>> ids.numpy().tolist(), counts.numpy().tolist()
    ([4, 2, 1], [1, 2])
    """
    splits = tf.cast(symbols.row_splits, tf.int64)
    num_words = tf.size(splits, out_type=tf.int64) - 1
    # [sentinel, word 0..., sentinel, word 1..., sentinel]: the last sentinel keeps the layout non-empty.
    place = tf.range(splits[-1]) + row_ids(splits) + 1
    size = splits[-1] + num_words + 1
    flat = tf.tensor_scatter_nd_update(tf.fill([size], tf.constant(sentinel, tf.int64)), place[:, None],
                                       symbols.flat_values)
    words = tf.concat([row_ids(splits_from_lengths(splits[1:] - splits[:-1] + 1)), [num_words]], 0)

    def body(flat, words, _):
        before = tf.size(flat, out_type=tf.int64)
        for _ in range(steps_per_check):
            flat, words = _merge_step(flat, words, pair_table, sentinel)
        return flat, words, before

    flat, words, _ = tf.while_loop(
        lambda flat, words, before: tf.size(flat, out_type=tf.int64) < before, body, [flat, words, size + 1],
        shape_invariants=[tf.TensorShape([None]), tf.TensorShape([None]), tf.TensorShape([])])
    real = tf.where(flat < sentinel)[:, 0]
    ids, word_of = tf.gather(flat, real), tf.gather(words, real)
    return ids, tf.math.unsorted_segment_sum(tf.ones_like(word_of), word_of, num_words)
