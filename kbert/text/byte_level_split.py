"""GPT-2's word splitting (RoBERTa's pre-tokenizer) in TensorFlow's RE2 regular expressions.

GPT-2 splits text with `'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+`
(`\\s`: Unicode White_Space). RE2 has no look-ahead, which `\\s+(?!\\S)` needs: a run of white space
before a word leaves its last character to the word (joined when it is a space, alone otherwise). So
the split is two rewrites: `CUT` first marks that last character off from the rest of its run, then
`WORD` (the pattern without the look-ahead) marks the end of every word, and one split on the mark gives
the words. The mark is the byte 0xFF, which valid UTF-8 never holds. Rewrites, not
`tf_text.regex_split`: that op compiles its pattern on every call, several times slower here.

Unicode versions: `\\p{L}`/`\\p{N}` follow TF's RE2 tables (Unicode 15.0); the reference (HF `tokenizers`,
Oniguruma) knows Unicode 16, so about 5,000 letters and digits first assigned after 15.0 (e.g. Garay,
Tulu-Tigalari, U+1C89) split here as symbols. Every code point assigned by Unicode 15.0 splits alike.
"""

from __future__ import annotations

import tensorflow as tf

from kbert.text.ragged_rows import ragged_from_lengths, sum_by_row

# Unicode White_Space, without and with the space itself.
_BLANK = r"\t-\r\x{85}\x{a0}\x{1680}\x{2000}-\x{200a}\x{2028}\x{2029}\x{202f}\x{205f}\x{3000}"
_WHITE = _BLANK + " "
_SYMBOLS = rf"[^{_WHITE}\p{{L}}\p{{N}}]+"
MARK = b"\xff"
# A white-space run of 2+ characters before a non-space: mark off its last character.
CUT = rf"([{_WHITE}]*[{_WHITE}])( [^{_WHITE}]|[{_BLANK}][^{_WHITE}])"
WORD = rf"'(?:s|t|re|ve|m|ll|d)| ?\p{{L}}+| ?\p{{N}}+| ?{_SYMBOLS}|[{_WHITE}]+"


def split_words(text: tf.Tensor) -> tf.RaggedTensor:
    """GPT-2's words of each string of a 1-D batch of valid UTF-8.

    The words of a row, joined, are the row again: the byte offset of a word is the sum of the lengths
    before it.

    Returns:
        string RaggedTensor `[batch, None]`.

    Example:
    >>> split_words(tf.constant(["Hello  world, it's\\n  ok"])).to_list()
    [[b'Hello', b' ', b' world', b',', b' it', b"'s", b'\\n ', b' ok']]
    """
    marked = tf.strings.regex_replace(text, CUT, b"\\1" + MARK + b"\\2")
    marked = tf.strings.regex_replace(marked, WORD, b"\\0" + MARK)
    pieces = tf.strings.split(marked, sep=MARK)  # every mark ends a piece: empty pieces between marks
    keep = tf.strings.length(pieces.flat_values) > 0
    return ragged_from_lengths(tf.boolean_mask(pieces.flat_values, keep),
                               sum_by_row(tf.cast(keep, tf.int64), pieces.row_splits))
