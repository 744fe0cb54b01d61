"""ALBERT's text normalisation (as HF's AlbertTokenizer does it) as TensorFlow ops on code-point tables.

transformers' AlbertTokenizer (the `tokenizers` pipeline that `AutoTokenizer` gives in transformers 5)
normalises text in four steps, then splits words at white space:

1. "``" and "''" become '"' (left to right; the pair's second character becomes the quote, the first is
   dropped);
2. unless keep_accents: NFKD, then every mark (Unicode Mn, Mc, Me) is deleted;
3. do_lower_case: each character is lower-cased on its own (Σ is always σ, never the final ς);
4. the model's own character map (SentencePiece's `precompiled_charsmap`; nmt_nfkc is NFKC plus control
   characters deleted and unusual spaces made " ");
5. words are split at Unicode White_Space; each word gets a "▁" in front.

Steps 2-4 act on one character at a time, so `code_point_table` computes them once for every code point
they change (a few ten thousand), and `AlbertNormalizer` looks the input's code points up in that table
(steps 2-4 and 5's spaces) and finds step 1's pairs with array operations. The result goes to
SentencePiece's graph op with the model's normaliser turned off (`SentencePieceModel.graph_proto`).

HF applies the character map to whole grapheme clusters under 6 bytes, and leaves larger clusters to
their characters; after step 2 a cluster is a single character almost always. Known divergences:
- Unicode versions: a code point assigned or re-categorised after HF's Unicode tables (e.g. the marks
  U+0898-U+089F, U+1ABF-U+1ACE of Unicode 13-14) follows Python's `unicodedata` here;
- keep_accents=True on decomposed text: a letter followed by combining marks stays decomposed here; HF
  composes such a cluster ("e" + U+0301 -> "é"). Text in NFC, what editors write, is not affected.
"""

from __future__ import annotations

import functools
import unicodedata

import numpy as np
import tensorflow as tf

from kbert.text.ragged_rows import ragged_from_lengths, row_ids, sum_by_row, where_true

# Unicode White_Space: HF's `WhitespaceSplit` (Rust's `char::is_whitespace`) splits words at these.
WHITE_SPACE = frozenset([*range(0x9, 0xE), 0x20, 0x85, 0xA0, 0x1680, *range(0x2000, 0x200B), 0x2028, 0x2029,
                         0x202F, 0x205F, 0x3000])
BACKTICK, APOSTROPHE, QUOTE = ord("`"), ord("'"), ord('"')
NUM_CODE_POINTS, BLOCK = 0x110000, 256
# Printable ASCII with tab, newline and carriage return: unless the model maps them, lower-casing and spaces
# for the three are all that normalisation does to these strings (`normalize_plain`).
PLAIN = r"[\t\n\r\x20-\x7e]*"
# Code points that may change under NFKD or lower-casing: planes 0-3 and 14 hold every assigned one but the
# private-use planes' (which neither step changes).
_ASSIGNED_PLANES = (range(0, 0x40000), range(0xE0000, 0xE1000))


@functools.lru_cache(maxsize=4)
def case_and_accents(lowercase: bool, strip_accents: bool) -> dict[int, str]:
    """Steps 2 and 3 for each code point that they change (about half a second, once per setting)."""
    changes = {}
    for plane in _ASSIGNED_PLANES:
        for code in plane:
            if 0xD800 <= code < 0xE000:
                continue
            char = text = chr(code)
            if strip_accents:
                text = "".join(c for c in unicodedata.normalize("NFKD", text) if unicodedata.category(c)[0] != "M")
            if lowercase:
                text = "".join(c.lower() for c in text)  # one at a time: str.lower() would use the final-sigma rule
            if text != char:
                changes[code] = text
    return changes


def code_point_table(charsmap: dict[int, str], lowercase: bool, strip_accents: bool,
                     unknown: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Steps 2-4 and step 5's white space (made " ") for every code point they change.

    Args:
        charsmap: dict. The model's character map for single characters (`charsmap_characters`).
        lowercase: bool. Step 3.
        strip_accents: bool. Step 2.
        unknown: int. A code point in no piece: NUL becomes it, so SentencePiece sees an unknown character
            where HF does (SentencePiece's op would end the text at a NUL).

    Returns:
        (keys, splits, values), int32: code point `keys[i]` becomes `values[splits[i]:splits[i + 1]]`;
        a code point not in the sorted `keys` stays as it is.

    Example:
    >>> keys, splits, values = code_point_table({}, lowercase=True, strip_accents=True, unknown=0xFFFF)
    >>> i = int(np.searchsorted(keys, ord("É")))
    >>> "".join(map(chr, values[splits[i]:splits[i + 1]]))
    'e'
    """
    changed = case_and_accents(lowercase, strip_accents)
    table = {}
    for code in sorted(set(changed) | set(charsmap) | WHITE_SPACE | {0}):
        text = "".join(charsmap.get(ord(c), c) for c in changed.get(code, chr(code)))
        text = "".join(" " if ord(c) in WHITE_SPACE else chr(unknown) if c == "\0" else c for c in text)
        if text != chr(code):
            table[code] = text
    keys = np.array(list(table), np.int32)
    lengths = np.array([len(t) for t in table.values()], np.int64)
    values = np.array([ord(c) for t in table.values() for c in t], np.int32)
    return keys, np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32), values


def plain_rule_holds(table: tuple[np.ndarray, np.ndarray, np.ndarray], lowercase: bool) -> bool:
    """Whether `normalize_plain` is the whole normalisation of text that matches `PLAIN`: true unless the
    model's character map changes printable ASCII."""
    keys, splits, values = table
    for char in map(chr, [9, 10, 13, *range(0x20, 0x7F)]):
        want = " " if char in "\t\n\r" else char.lower() if lowercase else char
        i = int(np.searchsorted(keys, ord(char)))
        got = "".join(map(chr, values[splits[i]:splits[i + 1]])) if i < len(keys) and keys[i] == ord(char) else char
        if got != want:
            return False
    return True


def normalize_plain(text: tf.Tensor, lowercase: bool) -> tf.Tensor:
    """Steps 1-5 for strings that match `PLAIN` (if `plain_rule_holds`): string ops, no code-point tables."""
    text = tf.strings.regex_replace(tf.strings.regex_replace(text, "``|''", '"'), r"[\t\n\r]", " ")
    return tf.strings.lower(text) if lowercase else text


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
    """Steps 1-5 on a batch of strings, as graph ops on the tables of `code_point_table`.

    A code point is looked up in two levels (its block of 256, then its place in the block) instead of a
    search in the sorted keys, which took four times as long.

    Args:
        table: the `(keys, splits, values)` of `code_point_table`.

    Example:
    >>> norm = AlbertNormalizer(code_point_table({}, lowercase=True, strip_accents=True, unknown=0xFFFF))
    >>> norm(tf.constant(["``Café''\\tNaïve"]))[0].numpy().tolist()
    [b'"cafe" naive']
    """

    def __init__(self, table: tuple[np.ndarray, np.ndarray, np.ndarray]):
        keys, splits, values = table
        slot = np.full(NUM_CODE_POINTS, -1, np.int32)  # the row of each code point in the table, -1: unchanged
        slot[keys] = np.arange(len(keys), dtype=np.int32)
        blocks, block_of = np.unique(slot.reshape(-1, BLOCK), axis=0, return_inverse=True)
        self.block_of = tf.constant(block_of.reshape(-1).astype(np.int32))
        self.slots = tf.constant(blocks.reshape(-1))
        self.starts = tf.constant(splits[:-1].astype(np.int32))
        self.lengths = tf.constant(np.diff(splits).astype(np.int32))
        # The values, then one '"' for step 1; an unchanged character is taken from the text after both.
        self.values = tf.constant(np.concatenate([values, [QUOTE]]).astype(np.int32))

    def __call__(self, text: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor, tf.Tensor]:
        """Normalises a 1-D batch.

        Returns:
            (normalized, char_splits, char_ends): the normalised strings (batch,); the row splits of the
            input's characters (batch + 1,); and each input character's end in bytes of the normalised
            batch, counted over the whole batch (a deleted character ends where the one before it does).
            Invalid UTF-8 is read as U+FFFD, one per invalid sequence.
        """
        chars = tf.strings.unicode_decode(text, "UTF-8", errors="replace", replacement_char=0xFFFD)
        code = chars.flat_values
        index = tf.gather(self.slots, tf.gather(self.block_of, code // BLOCK) * BLOCK + code % BLOCK)
        hit = index >= 0
        index = tf.maximum(index, 0)
        lengths = tf.where(hit, tf.gather(self.lengths, index), 1)
        starts = tf.where(hit, tf.gather(self.starts, index), tf.size(self.values) + tf.range(tf.size(code)))
        row = row_ids(chars.row_splits, tf.int32)
        same_row = tf.equal(row[1:], row[:-1])
        for quote in (BACKTICK, APOSTROPHE):
            first, second = quote_pairs(code, same_row, quote)
            lengths = tf.where(first, 0, lengths)
            starts = tf.where(second, tf.size(self.values) - 1, starts)
        out_splits = tf.concat([[0], tf.cumsum(lengths)], 0)
        out_char = row_ids(out_splits, tf.int32)  # the input character of each output code point
        source = tf.gather(starts, out_char) + tf.range(out_splits[-1]) - tf.gather(out_splits, out_char)
        out = tf.gather(tf.concat([self.values, code], 0), source)
        row_lengths = sum_by_row(lengths, chars.row_splits)
        normalized = tf.strings.unicode_encode(ragged_from_lengths(out, row_lengths), "UTF-8")
        out_bytes = tf.concat([[0], tf.cumsum(utf8_length(out))], 0)
        return normalized, chars.row_splits, tf.gather(out_bytes, out_splits[1:])
