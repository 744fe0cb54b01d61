"""Where words start in a subword vocabulary: WordPiece, SentencePiece and byte-level BPE conventions.

Whole-word and n-gram masking group a word's pieces; each vocabulary marks words its own way:

    wordpiece      (BERT)     a continuation piece starts with "##":  un ##aff ##able
    sentencepiece  (ALBERT)   a word's first piece starts with "▁":   ▁un aff able
    bytelevel      (RoBERTa)  a word's first piece starts with "Ġ":   Ġun aff able

`starts_word` answers for one piece and one convention; `word_convention` tells the convention from the
vocabulary itself, so no caller has to name it. This module imports no TensorFlow.
"""

from __future__ import annotations

from collections.abc import Sequence

WORDPIECE, SENTENCEPIECE, BYTELEVEL = "wordpiece", "sentencepiece", "bytelevel"
WORD_CONVENTIONS = (WORDPIECE, SENTENCEPIECE, BYTELEVEL)
CONTINUATION_PREFIX = "##"  # WordPiece
WORD_START_PREFIXES = {SENTENCEPIECE: "\u2581", BYTELEVEL: "\u0120"}  # "▁", "Ġ"


def starts_word(piece: str, convention: str) -> bool:
    """Whether `piece` begins a new word under the vocabulary's `convention`.

    WordPiece: every piece but a `##` piece. SentencePiece and byte-level BPE: a piece with the word-start
    marker, and also a piece with no letter or digit at all (punctuation, which BERT splits into a word of
    its own and which these vocabularies write without a marker after a word, as in `▁cat ,`).

    Args:
        piece: str. One vocabulary entry.
        convention: str. One of `WORD_CONVENTIONS`.

    Returns:
        True when the piece starts a word.

    Example:
        >>> [starts_word(p, "wordpiece") for p in ["un", "##aff", "##able", ","]]
        [True, False, False, True]
        >>> [starts_word(p, "sentencepiece") for p in ["\u2581un", "aff", "able", ","]]
        [True, False, False, True]
        >>> [starts_word(p, "bytelevel") for p in ["\u0120un", "aff", "able", ","]]
        [True, False, False, True]
    """
    if convention == WORDPIECE:
        return not piece.startswith(CONTINUATION_PREFIX)
    if convention not in WORD_START_PREFIXES:
        raise ValueError(f"convention must be one of {WORD_CONVENTIONS}, got {convention!r}.")
    return piece.startswith(WORD_START_PREFIXES[convention]) or not any(c.isalnum() for c in piece)


def word_convention(vocabulary: Sequence[str]) -> str:
    """The convention of a vocabulary, from its own pieces: the marker that most pieces carry.

    A vocabulary with none of the markers (e.g. single Chinese characters) is "wordpiece": every piece
    is then a word of its own.

    Args:
        vocabulary: Sequence[str]. The pieces in id order.

    Returns:
        One of `WORD_CONVENTIONS`.

    Example:
        >>> word_convention(["[PAD]", "the", "##s"]), word_convention(["<pad>", "\u2581the", "s"])
        ('wordpiece', 'sentencepiece')
        >>> word_convention(["<s>", "\u0120the", "s"])
        'bytelevel'
    """
    counts = {WORDPIECE: sum(len(p) > 2 and p.startswith(CONTINUATION_PREFIX) for p in vocabulary)}
    for convention, prefix in WORD_START_PREFIXES.items():
        counts[convention] = sum(p.startswith(prefix) for p in vocabulary)
    best = max(WORD_CONVENTIONS, key=lambda c: counts[c])  # ties (no marker at all): the first, wordpiece
    return best


def word_start_flags(vocabulary: Sequence[str], convention: str | None = None) -> list[bool]:
    """`starts_word` for every piece of `vocabulary`, in id order.

    Args:
        vocabulary: Sequence[str]. The pieces in id order.
        convention: str | None. One of `WORD_CONVENTIONS`; None: `word_convention(vocabulary)`.

    Returns:
        A list of bools, one per id.

    Example:
        >>> word_start_flags(["[CLS]", "un", "##aff", "##able"])
        [True, True, False, False]
    """
    convention = convention or word_convention(vocabulary)
    return [starts_word(piece, convention) for piece in vocabulary]
