"""BERT's basic-tokenizer normalisation as TensorFlow string ops.

Reproduces the reference BERT text pipeline (google-research/bert `BasicTokenizer`, and HF `tokenizers`'
`BertNormalizer` + `BertPreTokenizer`) with `tf.strings` and tensorflow-text ops:

1. invalid UTF-8 is replaced by U+FFFD (`tf.strings.unicode_transcode`), which step 2 then deletes;
2. text cleaning deletes U+FFFD and control (Cc, except tab/newline/carriage return), format (Cf, e.g.
   the zero-width space) and private-use (Co) characters; unassigned code points stay, as in the reference;
3. uncased mode: NFD, delete the combining marks (category Mn), lower-case each character;
4. splitting on white space, and around every punctuation character (Unicode P plus all ASCII
   non-alphanumerics, as BERT counts them) and every CJK ideograph, each kept as its own word.

Why not `tf_text.FastBertNormalizer`/`FastBertTokenizer`: their lower-casing is NFKC case folding, which
changes full-width punctuation, `ß`, ligatures and more, so ids differ from the reference.

Every step acts on each code point alone, so `code_point_table` can precompute it for all of them; the
TFLite tokenizer (`kbert.text.TFLiteBertTokenizer`) looks code points up in that table instead.

The splitting of step 4, though, is what `tf_text.FastWordpieceTokenizer` does itself when it
pre-tokenizes (white space, punctuation as ICU and BERT count it, CJK), one fused pass several times
faster than a regex split. `needs_exact_split` says where the two could disagree, so the tokenizer runs
that fast splitter on the normalised text everywhere else. For printable ASCII (with tab, newline and
carriage return) the whole normalisation is `normalize_printable_ascii`.
"""

from __future__ import annotations

import functools

import numpy as np
import tensorflow as tf
import tensorflow_text as tf_text
from tensorflow_text.python.ops.regex_split_ops import gen_regex_split_ops

# Control (Cc but tab, newline, carriage return), format (Cf) and private-use (Co) characters, and U+FFFD.
# Unassigned code points are kept: the reference keeps them too (they become [UNK]).
CONTROL = r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\p{Cf}\p{Co}\x{fffd}]"
# Rust/Unicode White_Space minus the control characters already deleted above.
WHITESPACE = r"[\t\n\r \x{a0}\x{1680}\x{2000}-\x{200a}\x{2028}\x{2029}\x{202f}\x{205f}\x{3000}]"
# BERT's punctuation: Unicode P* plus every ASCII character that is not a letter, digit or space.
ASCII_PUNCTUATION = r"!-/:-@\[-\x60{-~"
PUNCTUATION = f"[{ASCII_PUNCTUATION}\\p{{P}}]"
# The CJK blocks of HF tokenizers' BertNormalizer (google-research/bert's list, but from U+2B920).
CJK = (
    r"[\x{4e00}-\x{9fff}\x{3400}-\x{4dbf}\x{20000}-\x{2a6df}\x{2a700}-\x{2b73f}\x{2b740}-\x{2b81f}"
    r"\x{2b920}-\x{2ceaf}\x{f900}-\x{faff}\x{2f800}-\x{2fa1f}]"
)
COMBINING_MARK = r"\p{Mn}"
SPLIT_PATTERN = f"{WHITESPACE}+|{PUNCTUATION}|{CJK}"
KEEP_PATTERN = f"{PUNCTUATION}|{CJK}"
# One pass that puts spaces around punctuation and CJK and turns Unicode white space into spaces, so a
# plain ASCII-white-space split gives the words (several times faster than regex_split on 2 cores).
SPACE_OUT_PATTERN = f"({PUNCTUATION}|{CJK})|{WHITESPACE}"


# Strings that cleaning leaves alone and that have no accents: lower-casing is all their normalisation.
PRINTABLE_ASCII = r"[\t\n\r\x20-\x7e]*"
VALID_UTF8 = r"[\x{0}-\x{d7ff}\x{e000}-\x{10ffff}]*"
# Code points that FastWordpieceTokenizer's pre-splitting (ICU's newer Unicode tables, CJK from U+2B820)
# treats as punctuation but RE2 and the reference do not. Found by comparing the two splitters on every
# code point; tests/text re-checks the whole range.
SPLIT_MISMATCH = (
    r"[\x{1b4e}\x{1b4f}\x{1b7f}\x{10d6e}\x{113d4}\x{113d5}\x{113d7}\x{113d8}\x{11be1}"
    r"\x{16d6d}-\x{16d6f}\x{1e5ff}\x{2b820}-\x{2b91f}]"
)
# Every character that can be part of a word (neither a split nor kept alone), and some more: all but
# ASCII white space, ASCII punctuation and CJK. RE2 copies a class once per repetition of `{n,}`: with
# the exact class (Unicode punctuation) `needs_exact_split` took 4 ms to compile, once per tf.data iterator.
RUN_CHAR = rf"[^\t\n\r {ASCII_PUNCTUATION}{CJK[1:-1]}]"


def to_valid_utf8(text: tf.Tensor) -> tf.Tensor:
    """Replaces each invalid UTF-8 sequence with U+FFFD (later deleted by cleaning)."""
    # Transcoding is slow; RE2 matches exactly the strings it would leave unchanged (no overlong forms,
    # surrogates or code points past U+10FFFF), so only the others are transcoded.
    flat = tf.reshape(text, [-1])
    bad = tf.where(~tf.strings.regex_full_match(flat, VALID_UTF8))
    fixed = tf.strings.unicode_transcode(
        tf.gather_nd(flat, bad), input_encoding="UTF-8", output_encoding="UTF-8", errors="replace",
        replacement_char=0xFFFD,
    )
    return tf.reshape(tf.tensor_scatter_nd_update(flat, bad, fixed), tf.shape(text))


def normalize(text: tf.Tensor, lowercase: bool, strip_accents: bool) -> tf.Tensor:
    """Cleans and (optionally) lower-cases / strips accents of valid UTF-8 strings, elementwise.

    Applied to whole strings for ids, or to single characters for the offset mapping: both give the same
    result because every step is per character (NFD only reorders combining marks, which are deleted).
    """
    if strip_accents:
        text = tf_text.normalize_utf8(text, "NFD")
        text = tf.strings.regex_replace(text, f"{CONTROL}|{COMBINING_MARK}", "")
    else:
        text = tf.strings.regex_replace(text, CONTROL, "")
    if lowercase:
        # The reference lower-cases character by character: capital sigma is always σ, never the
        # word-final ς that ICU's context-sensitive string mapping (tf.strings.lower) would give.
        text = tf.strings.regex_replace(text, "\u03a3", "\u03c3")
        text = tf.strings.lower(text, encoding="utf-8")
    return text


def split_words(text: tf.Tensor) -> tf.RaggedTensor:
    """Splits normalised strings `[batch]` into words `[batch, None]`."""
    return tf.strings.split(tf.strings.regex_replace(text, SPACE_OUT_PATTERN, " \\1 "))


def split_words_with_offsets(text: tf.Tensor) -> tuple[tf.RaggedTensor, tf.RaggedTensor, tf.RaggedTensor]:
    """Like `split_words`, also returning each word's byte start and end in `text` (1-D)."""
    # tf_text.regex_split_with_offsets's own op, without the wrapper's three validated RaggedTensors: ~300
    # graph nodes that tf.data instantiates again for every iterator (see `ragged_rows`).
    words, starts, ends, splits = gen_regex_split_ops.regex_split_with_offsets(
        tf.reshape(text, [-1]), f"({SPLIT_PATTERN})", f"({KEEP_PATTERN})")
    return tuple(tf.RaggedTensor.from_row_splits(v, splits, validate=False) for v in (words, starts, ends))


def normalize_printable_ascii(text: tf.Tensor, lowercase: bool) -> tf.Tensor:
    """`normalize` for strings that match `PRINTABLE_ASCII`: ASCII lower-casing, nothing else to do."""
    return tf.strings.lower(text) if lowercase else text


def needs_exact_split(text: tf.Tensor, max_chars_per_word: int) -> tf.Tensor:
    """True where `FastWordpieceTokenizer`'s own splitting could differ from `split_words` (normalised text).

    That is a string holding a `SPLIT_MISMATCH` character, or a run of word characters long enough for
    a word within `max_chars_per_word` characters to exceed as many bytes (its limit counts bytes). The
    check errs on the safe side, where the regex split gives the same ids more slowly: pure ASCII words
    never exceed (a byte a character) but long ASCII runs are flagged too, and so are runs that only
    non-ASCII punctuation or white space breaks (`RUN_CHAR`).
    """
    run = min(max_chars_per_word // 4 + 1, 1000)  # a character has at most 4 bytes; RE2 counts <= 1000
    return tf.strings.regex_full_match(text, f"(?s).*(?:{SPLIT_MISMATCH}|{RUN_CHAR}{{{run},}}).*")


# What a character is to BERT's splitting: part of a word, a word by itself (punctuation, CJK), or a gap.
WORD, ALONE, SPACE = 0, 1, 2
NUM_CODE_POINTS = 0x110000


@functools.lru_cache(maxsize=4)
def code_point_table(lowercase: bool, strip_accents: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """`normalize` of every code point alone, and each code point's class (`WORD`, `ALONE`, `SPACE`).

    Computed with the very ops of `normalize` and the patterns of `split_words`, so a table-driven
    tokenizer built from it follows them. Surrogates (never valid UTF-8) normalise to "" like U+FFFD.

    Returns:
        (splits, code_points, classes): code point `c` normalises to `code_points[splits[c]:splits[c + 1]]`;
        `classes` (int8) holds the class of each of the `NUM_CODE_POINTS` code points.
    """
    code_points = np.arange(NUM_CODE_POINTS, dtype=np.int32)
    code_points[0xD800:0xE000] = 0xFFFD
    chars = tf.strings.unicode_encode(code_points[:, np.newaxis], "UTF-8")
    normalized = tf.strings.unicode_decode(normalize(chars, lowercase, strip_accents), "UTF-8")
    space = tf.strings.regex_full_match(chars, WHITESPACE).numpy()
    alone = tf.strings.regex_full_match(chars, KEEP_PATTERN).numpy()
    classes = np.where(space, SPACE, np.where(alone, ALONE, WORD)).astype(np.int8)
    return normalized.row_splits.numpy(), normalized.flat_values.numpy(), classes
