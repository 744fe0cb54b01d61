"""Character offsets of BERT's WordPiece tokens in text that normalisation may change in length.

`BertTokenizer.tokenize_with_offsets` takes printable ASCII straight from `FastWordpieceTokenizer`'s byte
offsets (normalising it keeps every length). Other text changes under normalisation ("İ" lower-cased is
two code points, "é" without its accent one byte shorter), so here each character is normalised on its
own and the pieces' byte offsets in the normalised text are mapped back to characters of the input.
"""

from __future__ import annotations

import tensorflow as tf
import tensorflow_text as tf_text

from kbert.constants import UNK
from kbert.text import normalization
from kbert.text.ragged_rows import gather_rows, ragged_from_lengths, restore_order, row_ids, sum_by_row, where_true


def long_words_as_unk(words: tf.Tensor, max_chars_per_word: int) -> tuple[tf.Tensor, tf.Tensor]:
    """Words ready for WordPiece: a word over `max_chars_per_word` characters becomes `[UNK]`.

    Args:
        words: string tensor (words,). Split, normalised words.
        max_chars_per_word: int. The longest word WordPiece splits.

    Returns:
        (words, too_long): the words with long ones replaced, and a bool tensor (words,) marking them.

    Example:
    >>> words, too_long = long_words_as_unk(tf.constant(["cat", "catcatcat"]), 4)
    >>> words.numpy().tolist(), too_long.numpy().tolist()
    ([b'cat', b'[UNK]'], [False, True])
    """
    too_long = tf.strings.length(words, unit="UTF8_CHAR") > max_chars_per_word
    # "[UNK]" is a whole vocabulary token and no split word can contain "[", so it maps to [UNK].
    return tf.where(too_long, tf.constant(UNK), words), too_long


def character_offsets(
    text: tf.Tensor,
    presplit: tf_text.FastWordpieceTokenizer,
    wordpiece: tf_text.FastWordpieceTokenizer,
    lowercase: bool,
    strip_accents: bool,
    max_chars_per_word: int,
) -> tuple[tf.RaggedTensor, tf.RaggedTensor, tf.RaggedTensor]:
    """Ids with each piece's start and end (exclusive) in Unicode characters, for valid UTF-8 strings.

    Args:
        text: string tensor (batch,). Valid UTF-8 (`normalization.to_valid_utf8`), not yet normalised.
        presplit: the tokenizer that splits words and runs WordPiece in one pass (`no_pretokenization=False`).
        wordpiece: the WordPiece tokenizer of single words, for rows split by regex instead.
        lowercase: bool. Lower-case the text.
        strip_accents: bool. NFD and drop combining marks.
        max_chars_per_word: int. A longer word is one `[UNK]` spanning all of it.

    Returns:
        (ids, starts, ends): int32, ragged (batch, None), in the order of `text`.
    """
    chars = tf.strings.unicode_decode(text, "UTF-8")  # (batch, chars) code points
    # Each distinct character is normalised once (a batch of paragraphs holds ~10^5 characters, ~10^3
    # distinct), and the text is rebuilt from code points: integer gathers, no string per character.
    distinct, index = tf.unique(chars.flat_values)
    norm = normalization.normalize(tf.strings.unicode_encode(distinct[:, None], "UTF-8"), lowercase, strip_accents)
    norm_code_points = tf.strings.unicode_decode(norm, "UTF-8")  # (distinct, 0 or more)
    take, take_splits = gather_rows(norm_code_points.row_splits, index)  # each character's code points
    norm_text = tf.strings.unicode_encode(ragged_from_lengths(
        tf.gather(norm_code_points.flat_values, take),
        sum_by_row(take_splits[1:] - take_splits[:-1], chars.row_splits)), "UTF-8")
    # Global (whole-batch) byte end of each normalised character, to map bytes back to characters.
    char_end = tf.cumsum(tf.gather(tf.strings.length(norm, unit="BYTE"), index))
    row_byte_start = tf.gather(tf.concat([[0], char_end], 0), chars.row_splits[:-1])
    char_row_start = tf.cast(chars.row_splits, tf.int32)

    def in_characters(rows, piece_row, start_b, end_b):
        """Pieces' byte spans within their normalised row -> character spans within the input row."""
        row = tf.gather(rows, piece_row)
        base = tf.gather(row_byte_start, row)
        starts = tf.searchsorted(char_end, start_b + base, side="right", out_type=tf.int32)
        ends = tf.searchsorted(char_end, end_b + base - 1, side="right", out_type=tf.int32) + 1
        return starts - tf.gather(char_row_start, row), ends - tf.gather(char_row_start, row)

    # As in `BertTokenizer._ids`: the fast splitter's own byte offsets where its splitting is BERT's, the
    # regex split otherwise.
    exact = normalization.needs_exact_split(norm_text, max_chars_per_word)
    fast_rows, exact_rows = tf.cast(where_true(~exact), tf.int32), tf.cast(where_true(exact), tf.int32)
    pieces, piece_starts, piece_ends = presplit.tokenize_with_offsets(tf.gather(norm_text, fast_rows))
    fast = (pieces, *(pieces.with_flat_values(t) for t in in_characters(
        fast_rows, row_ids(pieces.row_splits, tf.int32), tf.cast(piece_starts.flat_values, tf.int32),
        tf.cast(piece_ends.flat_values, tf.int32))))

    words, word_starts, word_ends = normalization.split_words_with_offsets(tf.gather(norm_text, exact_rows))
    words_in, too_long = long_words_as_unk(words.flat_values, max_chars_per_word)
    pieces, piece_starts, piece_ends = wordpiece.tokenize_with_offsets(words_in)
    piece_word = row_ids(pieces.row_splits)
    word_start = tf.gather(tf.cast(word_starts.flat_values, tf.int32), piece_word)
    word_len = tf.gather(tf.cast(word_ends.flat_values - word_starts.flat_values, tf.int32), piece_word)
    long_piece = tf.gather(too_long, piece_word)  # a word over the limit is one [UNK] spanning all of it
    start_b = word_start + tf.where(long_piece, 0, tf.cast(piece_starts.flat_values, tf.int32))
    end_b = word_start + tf.where(long_piece, word_len, tf.cast(piece_ends.flat_values, tf.int32))
    row_lengths = sum_by_row(pieces.row_lengths(), words.row_splits)
    exact_out = (pieces.flat_values, *in_characters(
        exact_rows, tf.gather(row_ids(words.row_splits, tf.int32), piece_word), start_b, end_b))
    exact_out = tuple(ragged_from_lengths(v, row_lengths) for v in exact_out)
    return restore_order(tuple(zip(fast, exact_out)), tf.concat([fast_rows, exact_rows], 0))
