"""In-graph post-processing for the serving signatures: words and entities, answer spans, mean pooling.

Everything here is dense TF ops on `[batch, length]` tensors (no ragged ops, no string slicing unless
asked), so the same code runs in a SavedModel and converts to TFLite built-ins.
"""

from __future__ import annotations

import tensorflow as tf

# Padding of the word / entity outputs past each row's count.
NO_INDEX = -1


def masked_mean(sequence_output: tf.Tensor, padding_mask: tf.Tensor) -> tf.Tensor:
    """Mean of the token vectors over real tokens (`[CLS]` and `[SEP]` included), `(batch, hidden)`."""
    mask = tf.expand_dims(tf.cast(padding_mask, sequence_output.dtype), 2)
    total = tf.reduce_sum(sequence_output * mask, axis=1)
    return total / tf.maximum(tf.reduce_sum(mask, axis=1), 1.0)


def word_starts(token_ids: tf.Tensor, segment_ids: tf.Tensor, padding_mask: tf.Tensor,
                is_suffix: tf.Tensor, segment: int = 0) -> tf.Tensor:
    """True at the first WordPiece of every word of `segment` (`(batch, length)` bool).

    A word's first piece is the one WordPiece does not mark with `##`; `[CLS]`/`[SEP]`/padding are never
    word starts. `is_suffix` is a bool vector over the vocabulary.
    """
    length = tf.shape(token_ids)[1]
    position = tf.range(length)[tf.newaxis, :]
    inside = tf.cast(padding_mask, tf.bool) & tf.equal(segment_ids, segment) & (position > 0)
    # The [SEP] closing the segment: the last real position of the segment.
    next_segment = tf.concat([segment_ids[:, 1:], tf.fill([tf.shape(token_ids)[0], 1], -1)], axis=1)
    next_mask = tf.concat([tf.cast(padding_mask, tf.bool)[:, 1:],
                           tf.zeros([tf.shape(token_ids)[0], 1], tf.bool)], axis=1)
    is_sep = ~(next_mask & tf.equal(next_segment, segment))
    return inside & ~is_sep & ~tf.gather(is_suffix, token_ids)


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


def best_spans(start_logits: tf.Tensor, end_logits: tf.Tensor, allowed: tf.Tensor,
               max_answer_tokens: int) -> dict[str, tf.Tensor]:
    """The highest-scoring span `i <= j < i + max_answer_tokens` with both ends in `allowed`.

    Scores are `start_logits[i] + end_logits[j]` (BERT's span score); the returned `score` is the
    span's probability under independent start and end softmaxes over the whole sequence.

    Returns:
        dict of `(batch,)` int32 `start_token`, `end_token` (-1 when no position is allowed), float32
        `score` and `null_score` (the `[CLS]` "no answer" probability).
    """
    length = tf.shape(start_logits)[1]
    # expand_dims, not [:, tf.newaxis]: TFLite has no built-in strided slice with a new axis on bools.
    i = tf.expand_dims(tf.range(length), 1)
    j = tf.expand_dims(tf.range(length), 0)
    shape_ok = tf.expand_dims((j >= i) & (j < i + max_answer_tokens), 0)  # (1, length, length)
    ok = shape_ok & tf.expand_dims(allowed, 2) & tf.expand_dims(allowed, 1)
    pair = tf.expand_dims(start_logits, 2) + tf.expand_dims(end_logits, 1)
    pair = tf.where(ok, pair, tf.float32.min)
    flat = tf.argmax(tf.reshape(pair, [tf.shape(pair)[0], -1]), axis=1, output_type=tf.int32)
    any_ok = tf.reduce_any(allowed, axis=1)
    start = tf.where(any_ok, flat // length, -1)
    end = tf.where(any_ok, flat % length, -1)
    start_p = tf.nn.softmax(start_logits, axis=-1)
    end_p = tf.nn.softmax(end_logits, axis=-1)
    score = (tf.gather(start_p, tf.maximum(start, 0), batch_dims=1)
             * tf.gather(end_p, tf.maximum(end, 0), batch_dims=1))
    return {
        "start_token": start,
        "end_token": end,
        "score": tf.where(any_ok, score, 0.0),
        "null_score": start_p[:, 0] * end_p[:, 0],
    }
