"""`AlbertNormalizer`: ALBERT's normalisation (HF AlbertTokenizer's) of a batch of strings, as graph ops.

The rules and their code-point tables are in `kbert.text.sentencepiece_normalization`. Printable ASCII rows
take a route of string ops (lower-casing and three regular expressions) when the tables say that is all
they need; the others are decoded, looked up code point by code point and encoded again, about five times
slower.
"""

from __future__ import annotations

import numpy as np
import tensorflow as tf

from kbert.text.ragged_rows import ragged_from_lengths, row_ids, splits_from_lengths, sum_by_row, where_true
from kbert.text.sentencepiece_normalization import PLAIN, plain_rule_holds

BACKTICK, APOSTROPHE, QUOTE = ord("`"), ord("'"), ord('"')
NUM_CODE_POINTS, BLOCK = 0x110000, 256
QUOTE_PAIR = "``|''"


def utf8_length(code_points: tf.Tensor) -> tf.Tensor:
    """Bytes of each code point in UTF-8."""
    return 1 + tf.cast(code_points >= 0x80, tf.int32) + tf.cast(code_points >= 0x800, tf.int32) + tf.cast(
        code_points >= 0x10000, tf.int32)


def quote_pairs(code_points: tf.Tensor, same_row: tf.Tensor, quote: int) -> tuple[tf.Tensor, tf.Tensor]:
    """Step 1's pairs of `quote` in flat code points: (first, second) masks of the pairs' characters.

    Pairs are taken left to right in each run of the character within a row: of three, the first two pair.
    `same_row[i]` says that code points i and i + 1 are in one row.
    """
    n = tf.size(code_points)
    is_quote = tf.equal(code_points, quote)
    after_quote = tf.concat([[False], is_quote[:-1] & same_row], 0)[:n]
    before_quote = tf.concat([is_quote[1:] & same_row, [False]], 0)[:n]
    run_start = is_quote & ~after_quote
    run_first = tf.gather(tf.concat([[0], tf.cast(where_true(run_start), tf.int32)], 0),
                          tf.cumsum(tf.cast(run_start, tf.int32)))
    first = is_quote & before_quote & tf.equal((tf.range(n) - run_first) % 2, 0)
    return first, tf.concat([[False], first[:-1]], 0)[:n]


class AlbertNormalizer:
    """Steps 1-5 of `kbert.text.sentencepiece_normalization` on a 1-D batch of strings.

    A code point is looked up in two levels (its block of 256, then its place in the block), four times
    faster than a search in the sorted keys.

    Args:
        table: the `(keys, splits, values)` of `code_point_table`.
        lowercase: bool. The table's lower-casing (for the plain route).

    Example:
    >>> from kbert.text.sentencepiece_normalization import code_point_table
    >>> norm = AlbertNormalizer(code_point_table({}, True, True, unknown=0xFFFF), lowercase=True)
    >>> norm(tf.constant(["``Café''\\tNaïve", "A ``B''"])).numpy().tolist()
    [b'"cafe" naive', b'a "b"']
    """

    def __init__(self, table: tuple[np.ndarray, np.ndarray, np.ndarray], lowercase: bool):
        keys, splits, values = table
        self.lowercase = lowercase
        self.plain_route = plain_rule_holds(table, lowercase)
        slot = np.full(NUM_CODE_POINTS, -1, np.int32)  # the row of each code point in the table, -1: unchanged
        slot[keys] = np.arange(len(keys), dtype=np.int32)
        blocks, block_of = np.unique(slot.reshape(-1, BLOCK), axis=0, return_inverse=True)
        self.block_of = tf.constant(block_of.reshape(-1).astype(np.int32))
        self.slots = tf.constant(blocks.reshape(-1))
        self.starts = tf.constant(splits[:-1].astype(np.int32))
        self.lengths = tf.constant(np.diff(splits).astype(np.int32))
        # The values, then one '"' for step 1; an unchanged character is taken from the text after both.
        self.values = tf.constant(np.concatenate([values, [QUOTE]]).astype(np.int32))
        # A character that the tables delete, if any: step 1 then writes it and '"' in place of a pair, a
        # string replacement that keeps the characters where they were, much cheaper than `quote_pairs`.
        deleted = keys[np.diff(splits) == 0]
        self.pair_marker = chr(int(deleted.min())) if len(deleted) else None

    def _plain(self, text: tf.Tensor) -> tf.Tensor:
        text = tf.strings.regex_replace(tf.strings.regex_replace(text, QUOTE_PAIR, '"'), r"[\t\n\r]", " ")
        return tf.strings.lower(text) if self.lowercase else text

    def _routes(self, text: tf.Tensor, plain_pattern: str) -> tuple[tf.Tensor, tf.Tensor]:
        """The rows of the plain route and the others."""
        if not self.plain_route:
            return tf.zeros([0], tf.int64), tf.range(tf.size(text, out_type=tf.int64))
        plain = tf.strings.regex_full_match(text, plain_pattern)
        return where_true(plain), where_true(~plain)

    def __call__(self, text: tf.Tensor) -> tf.Tensor:
        """The normalised strings, in the order of `text`."""
        plain_rows, other_rows = self._routes(text, PLAIN)
        normalized = tf.concat([self._plain(tf.gather(text, plain_rows)),
                                self.tables(tf.gather(text, other_rows))[0]], 0)
        return tf.gather(normalized, tf.math.invert_permutation(tf.concat([plain_rows, other_rows], 0)))

    def with_characters(self, text: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor, tf.Tensor, tf.Tensor, tf.Tensor]:
        """`tables`' four outputs (its quote pairs found by position) for the rows taken in the order
        `order`, also returned: plain rows without quote pairs first (their characters are bytes, and stay
        so), then the others."""
        plain_rows, other_rows = self._routes(text, PLAIN)
        if self.plain_route:  # a quote pair shortens the text: such rows take the tables
            pairs = tf.strings.regex_full_match(tf.gather(text, plain_rows), f"(?s).*(?:{QUOTE_PAIR}).*")
            other_rows = tf.concat([other_rows, tf.boolean_mask(plain_rows, pairs)], 0)
            plain_rows = tf.boolean_mask(plain_rows, ~pairs)
        plain = tf.gather(text, plain_rows)
        lengths = tf.strings.length(plain)
        plain_bytes = tf.reduce_sum(lengths)
        normalized, char_splits, char_starts, char_ends = self.tables(tf.gather(text, other_rows),
                                                                      mark_pairs=False)
        char_splits = tf.concat([splits_from_lengths(tf.cast(lengths, char_splits.dtype)),
                                 char_splits[1:] + tf.cast(plain_bytes, char_splits.dtype)], 0)
        char_starts = tf.concat([tf.range(plain_bytes), char_starts + plain_bytes], 0)
        char_ends = tf.concat([tf.range(1, plain_bytes + 1), char_ends + plain_bytes], 0)
        return (tf.concat([self._plain(plain), normalized], 0), char_splits, char_starts, char_ends,
                tf.concat([plain_rows, other_rows], 0))

    def tables(self, text: tf.Tensor, mark_pairs: bool = True) -> tuple[tf.Tensor, tf.Tensor, tf.Tensor, tf.Tensor]:
        """Normalises a 1-D batch through the code-point tables.

        Args:
            text: a 1-D batch of strings.
            mark_pairs: bool. Where the tables delete a character, find step 1's pairs by writing it over each
                pair's first character (a cheap string replacement); False: by position (`quote_pairs`),
                which tells where each pair is (the character bytes below need it).

        Returns:
            (normalized, char_splits, char_starts, char_ends): the normalised strings (batch,); the row
            splits of the input's characters (batch + 1,); and each input character's bytes [start, end) in
            the normalised batch, counted over the whole batch: the bytes it became (a deleted character:
            none, where the one before it ends). The first character of a quote pair ends where its pair's
            quote does (when `mark_pairs` is False or the tables delete nothing): the quote is both
            characters'. Invalid UTF-8 is read as U+FFFD, one per invalid sequence.
        """
        mark_pairs = mark_pairs and self.pair_marker is not None
        if mark_pairs:
            for pair in ("``", "''"):
                text = tf.strings.regex_replace(text, pair, self.pair_marker + '"')
        chars = tf.strings.unicode_decode(text, "UTF-8", errors="replace", replacement_char=0xFFFD)
        code = chars.flat_values
        block = tf.gather(self.block_of, tf.bitwise.right_shift(code, 8))  # BLOCK = 2 ** 8
        index = tf.gather(self.slots, block * BLOCK + tf.bitwise.bitwise_and(code, BLOCK - 1))
        hit = index >= 0
        index = tf.maximum(index, 0)
        lengths = tf.where(hit, tf.gather(self.lengths, index), 1)
        starts = tf.where(hit, tf.gather(self.starts, index), tf.size(self.values) + tf.range(tf.size(code)))
        joined = tf.zeros_like(hit)  # the first characters of quote pairs
        if not mark_pairs:
            row = row_ids(chars.row_splits, tf.int32)
            same_row = tf.equal(row[1:], row[:-1])
            for quote in (BACKTICK, APOSTROPHE):
                first, second = quote_pairs(code, same_row, quote)
                lengths = tf.where(first, 0, lengths)
                starts = tf.where(second, tf.size(self.values) - 1, starts)
                joined |= first
        out_splits = tf.concat([[0], tf.cumsum(lengths)], 0)
        out_char = row_ids(out_splits, tf.int32)  # the input character of each output code point
        source = tf.gather(starts, out_char) + tf.range(out_splits[-1]) - tf.gather(out_splits, out_char)
        out = tf.gather(tf.concat([self.values, code], 0), source)
        row_lengths = sum_by_row(lengths, chars.row_splits)
        normalized = tf.strings.unicode_encode(ragged_from_lengths(out, row_lengths), "UTF-8")
        out_bytes = tf.concat([[0], tf.cumsum(utf8_length(out))], 0)
        char_ends = tf.gather(out_bytes, out_splits[1:])
        # A pair's first character ends where the character after it (its pair's second, the quote) does.
        char_ends = tf.where(joined, tf.concat([char_ends[1:], char_ends[:1]], 0), char_ends)
        return normalized, chars.row_splits, tf.gather(out_bytes, out_splits[:-1]), char_ends
