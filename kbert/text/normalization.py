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
changes full-width punctuation, `ß`, ligatures and more, so ids differ from the reference (see issue 3).
"""

from __future__ import annotations

import tensorflow as tf
import tensorflow_text as tf_text

# Control (Cc but tab, newline, carriage return), format (Cf) and private-use (Co) characters, and U+FFFD.
# Unassigned code points are kept: the reference keeps them too (they become [UNK]).
CONTROL = r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\p{Cf}\p{Co}\x{fffd}]"
# Rust/Unicode White_Space minus the control characters already deleted above.
WHITESPACE = r"[\t\n\r \x{a0}\x{1680}\x{2000}-\x{200a}\x{2028}\x{2029}\x{202f}\x{205f}\x{3000}]"
# BERT's punctuation: Unicode P* plus every ASCII character that is not a letter, digit or space.
PUNCTUATION = r"[!-/:-@\[-\x60{-~\p{P}]"
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


def to_valid_utf8(text: tf.Tensor) -> tf.Tensor:
    """Replaces each invalid UTF-8 sequence with U+FFFD (later deleted by cleaning)."""
    return tf.strings.unicode_transcode(
        text, input_encoding="UTF-8", output_encoding="UTF-8", errors="replace", replacement_char=0xFFFD
    )


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
    """Like `split_words`, also returning each word's byte start and end in `text`."""
    return tf_text.regex_split_with_offsets(text, SPLIT_PATTERN, KEEP_PATTERN)
