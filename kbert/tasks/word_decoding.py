"""Word and entity decoding of a tagger's piece-level predictions, for evaluation and serving alike.

Everything here is dense TF ops on `[batch, length]` tensors (no ragged ops, no string slicing), so the
same functions run eagerly when `kbert evaluate` scores a model, inside the SavedModel's `serving_default`,
and in the TFLite file (built-ins only).
"""

from __future__ import annotations

from typing import Sequence

import tensorflow as tf

# Padding of the word / entity outputs past each row's count.
NO_INDEX = -1


def word_starts(word_ids: tf.Tensor, in_text: tf.Tensor) -> tf.Tensor:
    """True at the first piece of every word of one text (`(batch, length)` bool).

    Args:
        word_ids: `(batch, length)` int32, each piece's word index in its text as its tokenizer splits words
            (`word_ids`: WordPiece's non-`##` pieces, byte-level BPE's pieces after white space), -1 on special
            tokens and padding.
        in_text: `(batch, length)` bool, True on the pieces of the text whose words are wanted (pieces off it,
            such as a byte-level piece of white space only, start no word).

    Returns:
        `(batch, length)` bool: a piece of the text whose word index differs from the piece before it.
    """
    word_ids = tf.where(in_text, word_ids, -1)
    previous = tf.concat([tf.fill([tf.shape(word_ids)[0], 1], -1), word_ids[:, :-1]], axis=1)
    return in_text & (word_ids >= 0) & tf.not_equal(word_ids, previous)


def words_from_tokens(first: tf.Tensor, inside: tf.Tensor, starts: tf.Tensor, ends: tf.Tensor,
                      token_values: tf.Tensor) -> dict[str, tf.Tensor]:
    """Gathers word-level values: one column per word, padded with `NO_INDEX`.

    Args:
        first: `(batch, length)` bool, True at each word's first piece.
        inside: `(batch, length)` bool, True on every piece of the segment's words.
        starts, ends: `(batch, length)` int32 character offsets of each piece.
        token_values: `(batch, length)` int32 value read at each word's first piece (e.g. a label id).

    Returns:
        dict of `num_words (batch,)` and `(batch, max_words)` int32 `word_start`, `word_end` and
        `word_value`.
    """
    batch, length = tf.shape(first)[0], tf.shape(first)[1]
    word_index = tf.cumsum(tf.cast(first, tf.int32), axis=1) - 1  # (batch, length)
    valid = inside & (word_index >= 0)
    num_words = tf.reduce_sum(tf.cast(first, tf.int32), axis=1)
    # Scatter into a (batch * length) table: segment id = row * length + word index; others go to a sink.
    sink = batch * length
    ids = tf.where(valid, tf.range(batch)[:, tf.newaxis] * length + word_index, sink)
    ids = tf.reshape(ids, [-1])

    def per_word(values, reducer, fill):
        out = reducer(tf.reshape(values, [-1]), ids, num_segments=sink + 1)[:-1]
        out = tf.reshape(out, [batch, length])
        column = tf.range(length)[tf.newaxis, :]
        return tf.where(column < num_words[:, tf.newaxis], out, fill)

    max_words = tf.reduce_max(tf.concat([num_words, [0]], 0))
    first_value = tf.where(first, token_values, tf.int32.min)
    out = {
        "word_start": per_word(starts, tf.math.unsorted_segment_min, NO_INDEX),
        "word_end": per_word(ends, tf.math.unsorted_segment_max, NO_INDEX),
        "word_value": per_word(first_value, tf.math.unsorted_segment_max, NO_INDEX),
    }
    out = {k: v[:, :max_words] for k, v in out.items()}
    out["num_words"] = num_words
    return out


def bio_entities(tag_ids: tf.Tensor, num_words: tf.Tensor, begins: tf.Tensor, types: tf.Tensor
                 ) -> dict[str, tf.Tensor]:
    """Groups word tags into entities (conlleval rules: `I-X` after `O` or another type opens one).

    Args:
        tag_ids: `(batch, words)` int32 label ids (`NO_INDEX` past `num_words`).
        num_words: `(batch,)` int32.
        begins: `(num_labels,)` bool, True for `B-*` labels.
        types: `(num_labels,)` int32 entity type id of each label, -1 for `O`.

    Returns:
        dict of `num_entities (batch,)` and `(batch, max_entities)` int32 `entity_type` (type id),
        `entity_first_word` and `entity_last_word` (inclusive), padded with `NO_INDEX`.
    """
    batch, words = tf.shape(tag_ids)[0], tf.shape(tag_ids)[1]
    safe = tf.maximum(tag_ids, 0)
    word_type = tf.where(tag_ids >= 0, tf.gather(types, safe), -1)
    is_begin = tf.where(tag_ids >= 0, tf.gather(begins, safe), False)
    previous = tf.concat([tf.fill([batch, 1], -1), word_type[:, :-1]], axis=1)
    opens = (word_type >= 0) & (is_begin | tf.not_equal(word_type, previous))
    following_type = tf.concat([word_type[:, 1:], tf.fill([batch, 1], -1)], axis=1)
    following_begin = tf.concat([is_begin[:, 1:], tf.zeros([batch, 1], tf.bool)], axis=1)
    closes = (word_type >= 0) & (tf.not_equal(following_type, word_type) | following_begin)
    entity_index = tf.cumsum(tf.cast(opens, tf.int32), axis=1) - 1
    num_entities = tf.reduce_sum(tf.cast(opens, tf.int32), axis=1)
    sink = batch * words
    row_base = tf.range(batch)[:, tf.newaxis] * words
    position = tf.broadcast_to(tf.range(words)[tf.newaxis, :], [batch, words])

    def scatter(mask, values):
        ids = tf.reshape(tf.where(mask, row_base + entity_index, sink), [-1])
        out = tf.math.unsorted_segment_max(tf.reshape(tf.where(mask, values, tf.int32.min), [-1]), ids,
                                           num_segments=sink + 1)[:-1]
        out = tf.reshape(out, [batch, words])
        return tf.where(position < num_entities[:, tf.newaxis], out, NO_INDEX)

    max_entities = tf.reduce_max(tf.concat([num_entities, [0]], 0))
    out = {
        "entity_type": scatter(opens, word_type),
        "entity_first_word": scatter(opens, position),
        "entity_last_word": scatter(closes, position),
    }
    out = {k: v[:, :max_entities] for k, v in out.items()}
    out["num_entities"] = num_entities
    return out


def word_predictions(logits: tf.Tensor, word_ids: tf.Tensor, num_words: Sequence[int],
                     default: int = 0) -> list[list[int]]:
    """Per-word label ids of a batch of sentences: the argmax at each word's first piece.

    The same `words_from_tokens` that the serving graph runs; words cut off by truncation (or that
    tokenize to nothing) get `default`.

    Args:
        logits: `(batch, length, num_labels)` float logits (a single sentence's `(length, num_labels)` too).
        word_ids: `(batch, length)` int word index of every piece, -1 off words (from
            `tagging_dataset(keep_word_ids=True)`).
        num_words: the number of words of each sentence.
        default: int. Label id for words without a piece.

    Returns:
        list (one per sentence) of lists of label ids, one per word.

    Example:
    >>> import numpy as np
    >>> word_predictions(np.eye(2)[[0, 1, 0]][None] * 5, np.array([[-1, 0, -1]]), [2])
    [[1, 0]]
    """
    logits = tf.convert_to_tensor(logits)
    word_ids = tf.cast(tf.convert_to_tensor(word_ids), tf.int32)
    if logits.shape.rank == 2:
        logits, word_ids = logits[tf.newaxis], word_ids[tf.newaxis]
    inside = word_ids >= 0
    previous = tf.concat([tf.fill([tf.shape(word_ids)[0], 1], -1), word_ids[:, :-1]], axis=1)
    first = inside & tf.not_equal(word_ids, previous)
    words = words_from_tokens(first, inside, word_ids, word_ids, tf.argmax(logits, -1, output_type=tf.int32))
    out = []
    for row, count in enumerate(num_words):
        predicted = [default] * int(count)
        starts, values = words["word_start"][row].numpy().tolist(), words["word_value"][row].numpy().tolist()
        for word, value in zip(starts, values):
            if 0 <= word < count:
                predicted[word] = value
        out.append(predicted)
    return out
