"""`TFLiteBertTokenizer`: `BertTokenizer`'s exact ids from ops that LiteRT runs without the Flex delegate."""

from __future__ import annotations

import os

import keras
import numpy as np
import tensorflow as tf
import tensorflow_text as tf_text

from kbert.text import normalization
from kbert.text.bert_tokenizer import BertTokenizer
from kbert.text.normalization import ALONE, SPACE, WORD
from kbert.text.ragged_rows import sum_by_row, where_true

BLOCK = 256  # code points per block of the two-level normalisation table
# (lead byte range, length, bits of the lead byte, lowest and highest second byte): well-formed UTF-8.
_UTF8_LEADS = ((0x00, 0x7F, 1, 0x7F, 0x00, 0xFF), (0xC2, 0xDF, 2, 0x1F, 0x80, 0xBF),
               (0xE0, 0xE0, 3, 0x0F, 0xA0, 0xBF), (0xE1, 0xEC, 3, 0x0F, 0x80, 0xBF),
               (0xED, 0xED, 3, 0x0F, 0x80, 0x9F), (0xEE, 0xEF, 3, 0x0F, 0x80, 0xBF),
               (0xF0, 0xF0, 4, 0x07, 0x90, 0xBF), (0xF1, 0xF3, 4, 0x07, 0x80, 0xBF),
               (0xF4, 0xF4, 4, 0x07, 0x80, 0x8F))


def _utf8_tables() -> np.ndarray:
    """Per byte value: sequence length (0: never starts a character), lead bits, second-byte range."""
    table = np.zeros((4, 256), np.int32)
    for lo, hi, length, bits, second_lo, second_hi in _UTF8_LEADS:
        table[:, lo:hi + 1] = np.array([length, bits, second_lo, second_hi])[:, np.newaxis]
    return table


class _CodePointUnits:
    """Each code point as the units BERT's normalisation and splitting make of it, as graph tables.

    A unit is a run of word characters, one character that is a word by itself, or white space. A
    character that no vocabulary token holds becomes a placeholder (also in no token): its word is
    `[UNK]` either way, and that keeps the tables small. Units are written as the tokens of a
    WordPiece detokenizer: a word is its first unit's token followed by "##" tokens of the others.
    """

    def __init__(self, vocabulary: list[str], lowercase: bool, strip_accents: bool):
        splits, normalized, classes = normalization.code_point_table(lowercase, strip_accents)
        known_chars = set("".join(vocabulary))
        self.placeholder = next(c for c in map(chr, range(1, 32)) if c not in known_chars)
        known = np.zeros(normalization.NUM_CODE_POINTS, bool)
        known[[ord(c) for c in known_chars]] = True
        # Most code points normalise to one character: their units are found with array operations.
        lengths = np.diff(splits)
        single = lengths == 1
        code = normalized[splits[:-1][single]]
        cls = classes[code].astype(np.int64)
        keys = np.where(cls == SPACE, -1, np.where(known[code], code, 0) * 4 + cls)
        unique_keys, unit_of_single = np.unique(keys, return_inverse=True)
        index = {("", SPACE) if k < 0 else (chr(k // 4) if k >= 4 else self.placeholder, int(k % 4)): i
                 for i, k in enumerate(unique_keys.tolist())}
        table = np.full((normalization.NUM_CODE_POINTS, 1), -1, np.int32)
        table[single, 0] = unit_of_single
        # The rest: deleted (no unit) or several characters, e.g. a Hangul syllable's jamo.
        for cp in np.flatnonzero(lengths > 1).tolist():
            text = "".join(map(chr, normalized[splits[cp]:splits[cp + 1]]))
            ids = [index.setdefault(u, len(index)) for u in self._units_of(text, classes, known)]
            if len(ids) > table.shape[1]:
                table = np.pad(table, ((0, 0), (0, len(ids) - table.shape[1])), constant_values=-1)
            table[cp, :len(ids)] = ids
        self.units = sorted(index, key=index.get)
        self.width = table.shape[1]
        blocks: dict[bytes, int] = {}
        rows = table.reshape(-1, BLOCK * self.width)
        self.block_of = np.array([blocks.setdefault(r.tobytes(), len(blocks)) for r in rows], np.int32)
        unique = np.stack([np.frombuffer(key, np.int32) for key in blocks])
        self.slots = unique.reshape(-1, self.width)  # (blocks * BLOCK, width): unit ids, -1 past the last
        strings = sorted({s for s, c in self.units if c != SPACE} | {self.placeholder})
        self.tokens = strings + ["##" + s for s in strings]
        position = {s: i for i, s in enumerate(strings)}
        self.unit_class = np.array([c for _, c in self.units], np.int32)
        self.unit_chars = np.array([len(s) for s, _ in self.units], np.int32)
        self.unit_token = np.array([position.get(s, 0) for s, _ in self.units], np.int32)
        self.token_bytes = np.array([len(t.encode("utf-8")) for t in strings] * 2, np.int32)
        self.num_strings = len(strings)

    def _units_of(self, text: str, classes: np.ndarray, known: np.ndarray) -> list[tuple[str, int]]:
        out: list[tuple[str, int]] = []
        run = ""
        for ch in text:
            cls = int(classes[ord(ch)])
            if cls == WORD:
                run += ch if known[ord(ch)] else self.placeholder
                continue
            if run:
                out.append((run, WORD))
                run = ""
            if cls == ALONE:
                out.append((ch if known[ord(ch)] else self.placeholder, ALONE))
            elif not out or out[-1][1] != SPACE:
                out.append(("", SPACE))
        if run:
            out.append((run, WORD))
        return out


@keras.saving.register_keras_serializable(package="kbert")
class TFLiteBertTokenizer(BertTokenizer):
    """`BertTokenizer` with the same ids, built from ops with TFLite kernels (for LiteRT, no Flex delegate).

    BERT's normalisation (cleaning, lower-casing, NFD + accent stripping) and its pre-splitting act on
    each code point alone, so they are precomputed here for every code point (from
    `kbert.text.normalization`, the ops of `BertTokenizer`) into a two-level lookup table. In the graph:
    tensorflow-text's `ByteSplitter` gives the bytes, UTF-8 is decoded with integer built-ins (invalid
    sequences are dropped, as BERT's cleaning drops their U+FFFD), the table gives each character's
    units, words are formed from the unit classes, `FastWordpieceTokenizer.detokenize` writes each
    normalised word as a string and `FastWordpieceTokenizer` runs WordPiece on it. Every op has a TFLite
    built-in or a kernel in `tensorflow_text.tflite_registrar.SELECT_TFTEXT_OPS`: `tokenize`,
    `tokenize_words` and `tokenize_with_offsets` (characters, as `BertTokenizer`'s) convert; the
    inherited `detokenize` does not. (`tf_text.FastBertTokenizer` converts too, but its NFKC case
    folding gives other ids than BERT on full-width punctuation, `ß`, ligatures and more.)

    Args:
        vocabulary: str, path-like or list of str. a `vocab.txt` path or the tokens in id order.
        lowercase: bool. uncased mode: lower-case (and, by default, strip accents).
        strip_accents: bool or None. NFD + drop combining marks; `None` follows `lowercase` (as BERT).
        max_chars_per_word: int. a word longer than this (in characters) becomes `[UNK]`.

    Call arguments:
        inputs: a string scalar, a 1-D string tensor (or Python list), or `[batch, 1]`.

    Returns:
        int32 ids without `[CLS]`/`[SEP]`, exactly `BertTokenizer`'s: a `tf.RaggedTensor` `[batch, None]`,
        or a 1-D tensor for a scalar string.

    Example:
    >>> tok = TFLiteBertTokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "the", "cat", "##s", "，"])
    >>> tok(["The cats，"]).to_list()
    [[4, 5, 6, 7]]
    """

    in_tflite = True

    def __init__(self, vocabulary: str | os.PathLike | list[str], lowercase: bool = True,
                 strip_accents: bool | None = None, max_chars_per_word: int = 100, **kwargs):
        super().__init__(vocabulary, lowercase=lowercase, strip_accents=strip_accents,
                         max_chars_per_word=max_chars_per_word, **kwargs)
        units = _CodePointUnits(self.vocabulary, self.lowercase, self.strip_accents)
        self._bytes = tf_text.ByteSplitter()
        self._utf8 = [tf.constant(t) for t in _utf8_tables()]
        self._block_of = tf.constant(units.block_of.astype(np.int32))
        self._slots = tf.constant(units.slots)
        self._unit_class = tf.constant(units.unit_class)
        self._unit_chars = tf.constant(units.unit_chars)
        self._unit_token = tf.constant(units.unit_token)
        self._num_strings = units.num_strings
        self._token_bytes = tf.constant(units.token_bytes)
        self._placeholder_token = units.tokens.index(units.placeholder)
        self._writer = tf_text.FastWordpieceTokenizer(
            vocab=units.tokens, suffix_indicator="##", unknown_token=units.placeholder,
            token_out_type=tf.int32, no_pretokenization=True, support_detokenization=True)

    @classmethod
    def from_tokenizer(cls, tokenizer: BertTokenizer) -> "TFLiteBertTokenizer":
        """The TFLite tokenizer with `tokenizer`'s vocabulary and settings."""
        return cls(tokenizer.get_vocabulary(), lowercase=tokenizer.lowercase,
                   strip_accents=tokenizer.strip_accents, max_chars_per_word=tokenizer.max_chars_per_word)

    def _characters(self, text: tf.Tensor) -> dict[str, tf.Tensor]:
        """The well-formed UTF-8 characters of a batch: code point, row and position in the row.

        The position counts characters as `BertTokenizer`'s offsets do: each ill-formed sequence (a
        maximal prefix of a well-formed one, or one stray byte) is one U+FFFD.
        """
        pieces = self._bytes.split(text)
        b = tf.cast(pieces.flat_values, tf.int32)
        splits = tf.cast(pieces.row_splits, tf.int32)
        row = tf.cast(pieces.value_rowids(), tf.int32)
        pos = tf.range(tf.size(b))
        left = tf.gather(splits[1:], row) - pos  # bytes from here to the end of the row
        padded = tf.concat([b, [0, 0, 0]], 0)
        length, bits, second_lo, second_hi = (tf.gather(t, b) for t in self._utf8)
        later = [tf.where(left > k, tf.gather(padded, pos + k), 0) for k in (1, 2, 3)]
        cont = [(x >= 0x80) & (x <= 0xBF) for x in later]
        second = (length >= 2) & (later[0] >= second_lo) & (later[0] <= second_hi)
        third = second & (length >= 3) & cont[1]
        fourth = third & (length >= 4) & cont[2]
        valid = (length == 1) | (second & (length == 2)) | (third & (length == 3)) | fourth
        # Bytes of the maximal well-formed prefix starting here; a byte inside an earlier one starts nothing.
        prefix = 1 + tf.cast(second, tf.int32) + tf.cast(third, tf.int32) + tf.cast(fourth, tf.int32)
        offset = pos - tf.gather(splits[:-1], row)
        covered = tf.zeros_like(valid)
        for k in (1, 2, 3):
            covered |= (offset >= k) & (tf.gather(tf.concat([[0, 0, 0], prefix], 0), pos + 3 - k) > k)
        count = tf.concat([[0], tf.cumsum(tf.cast(~covered, tf.int32))], 0)
        index = tf.gather(count, pos) - tf.gather(tf.gather(count, splits[:-1]), row)
        # Remainders, not bitwise AND: TFLite has no AND kernel (`bits` is 2**n - 1).
        code = b % (bits + 1)
        for k in range(3):
            code = tf.where(length > k + 1, code * 64 + later[k] % 64, code)
        keep = where_true(valid)
        return {"code": tf.gather(code, keep), "row": tf.gather(row, keep), "index": tf.gather(index, keep),
                "splits": splits}

    def _words(self, text: tf.Tensor) -> dict[str, tf.Tensor]:
        """BERT's normalised words of a batch, as detokenizer ids of their units.

        Returns:
            token: `(units,)` the units' detokenizer ids, word after word (a word's first unit plain, the
                others "##"); word_splits: int64 `(words + 1,)` units into words; row_splits: int64
                `(rows + 1,)` words into rows; char: `(units,)` each unit's character position in its row.
        """
        chars = self._characters(text)
        block = tf.gather(self._block_of, chars["code"] // BLOCK)
        slots = tf.gather(self._slots, block * BLOCK + chars["code"] % BLOCK)  # (chars, width)
        present = tf.where(slots >= 0)  # (units, 2): character, slot
        unit = tf.gather_nd(slots, present)
        char = present[:, 0]
        row = tf.gather(chars["row"], char)
        cls = tf.gather(self._unit_class, unit)
        first_in_row = tf.not_equal(row, tf.concat([[-1], row[:-1]], 0))
        after_word = tf.equal(tf.concat([[SPACE], cls[:-1]], 0), WORD) & ~first_in_row
        starts_word = tf.equal(cls, ALONE) | (tf.equal(cls, WORD) & ~after_word)
        kept = where_true(tf.not_equal(cls, SPACE))
        unit, char, row, starts_word = (tf.gather(t, kept) for t in (unit, char, row, starts_word))
        starts = where_true(starts_word)
        word = tf.cumsum(tf.cast(starts_word, tf.int32)) - 1
        word_chars = tf.math.unsorted_segment_sum(tf.gather(self._unit_chars, unit), word, tf.size(starts))
        token = tf.gather(self._unit_token, unit)
        # A word over the length limit is [UNK]: a placeholder first unit makes WordPiece say so.
        too_long = tf.gather(word_chars > self.max_chars_per_word, word)
        token = tf.where(too_long & starts_word, self._placeholder_token, token)
        token = tf.where(starts_word, token, token + self._num_strings)
        num_rows = tf.size(chars["splits"]) - 1
        words_per_row = tf.math.unsorted_segment_sum(tf.ones(tf.shape(starts), tf.int32), tf.gather(row, starts),
                                                     num_rows)
        # Splits from counts and starts: `from_value_rowids` would need a bincount that TFLite lacks.
        return {"token": token, "word_splits": tf.concat([starts, tf.shape(token, out_type=tf.int64)], 0),
                "row_splits": tf.concat([[0], tf.cumsum(tf.cast(words_per_row, tf.int64))], 0),
                "char": tf.gather(chars["index"], char)}

    def _pieces(self, w: dict[str, tf.Tensor], with_offsets: bool = False):
        """WordPiece on the words of `_words` (`tokenize` or `tokenize_with_offsets` of the word strings)."""
        words = self._writer.detokenize(tf.RaggedTensor.from_row_splits(w["token"], w["word_splits"],
                                                                        validate=False))
        return self._wordpiece.tokenize_with_offsets(words) if with_offsets else self._wordpiece.tokenize(words)

    def _ids(self, text: tf.Tensor) -> tf.RaggedTensor:
        w = self._words(text)
        pieces = self._pieces(w)  # (words, None)
        return tf.RaggedTensor.from_row_lengths(pieces.flat_values,
                                                sum_by_row(pieces.row_lengths(), w["row_splits"]))

    def tokenize_with_offsets(self, inputs):
        """Ids with each token's start and end (exclusive) in Unicode characters: `BertTokenizer`'s."""
        text, scalar = self._prepare(inputs)
        w = self._words(text)
        pieces, starts, ends = self._pieces(w, with_offsets=True)
        # The words' bytes one after another: each byte's unit by a running count of unit starts.
        size = tf.gather(self._token_bytes, w["token"])
        unit_start = tf.cumsum(size, exclusive=True)
        marks = tf.scatter_nd(unit_start[:, tf.newaxis], tf.ones_like(unit_start), tf.reduce_sum(size)[tf.newaxis])
        char_of_byte = tf.gather(w["char"], tf.cumsum(marks) - 1)
        base = tf.gather(tf.gather(unit_start, w["word_splits"][:-1]), tf.cast(pieces.value_rowids(), tf.int32))
        first = tf.gather(char_of_byte, base + tf.cast(starts.flat_values, tf.int32))
        last = tf.gather(char_of_byte, base + tf.cast(ends.flat_values, tf.int32) - 1)
        lengths = sum_by_row(pieces.row_lengths(), w["row_splits"])
        out = tuple(tf.RaggedTensor.from_row_lengths(v, lengths) for v in (pieces.flat_values, first, last + 1))
        return tuple(t[0] for t in out) if scalar else out
