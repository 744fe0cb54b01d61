"""Seeded generators of hostile serving inputs: any Unicode, invalid UTF-8, empty, huge, special tokens.

Plain numpy randomness (no test framework), so the fuzz script, the slow test and the everyday test draw
from the same distribution and a failing batch is reproduced from its seed alone.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

MEGABYTE = 1_000_000
# (first, last) code points; uniform within a range, ranges drawn uniformly.
RANGES = [
    (0x20, 0x7E),  # printable ASCII
    (0x00, 0x1F), (0x7F, 0x9F),  # C0 / C1 control characters
    (0xA0, 0x24F),  # Latin-1, Latin Extended
    (0x300, 0x36F),  # combining diacritical marks
    (0x370, 0x52F),  # Greek, Cyrillic
    (0x590, 0x6FF),  # Hebrew, Arabic (right to left)
    (0x900, 0xDFF),  # Indic scripts
    (0xE00, 0xEFF),  # Thai, Lao
    (0x1100, 0x11FF), (0xAC00, 0xD7A3),  # Hangul
    (0x2000, 0x206F),  # general punctuation: spaces, zero-width joiners, bidi controls
    (0x2100, 0x2BFF),  # symbols, arrows, ligature-like letterlike symbols
    (0x3000, 0x30FF),  # CJK punctuation, kana
    (0x3400, 0x4DBF), (0x4E00, 0x9FFF),  # CJK ideographs
    (0xE000, 0xF8FF),  # private use
    (0xF900, 0xFAFF), (0xFB00, 0xFB4F),  # CJK compatibility, alphabetic presentation forms (ligatures)
    (0xFE00, 0xFE0F), (0xFE30, 0xFE6F),  # variation selectors, CJK compatibility / small forms
    (0xFF00, 0xFFEF),  # half- and full-width forms
    (0xFFF0, 0xFFFF),  # specials and noncharacters
    (0x10000, 0x1FFFF),  # plane 1: historic scripts, math, emoji
    (0x1F300, 0x1FAFF),  # emoji
    (0x20000, 0x2FA1F),  # plane 2: CJK extensions
    (0x30000, 0xDFFFF),  # planes 3-13, mostly unassigned
    (0xE0000, 0xE01EF),  # tags, variation selectors supplement
    (0xF0000, 0x10FFFF),  # planes 15-16: private use
]
EMOJI_SEQUENCES = [
    "\U0001F468\u200D\U0001F469\u200D\U0001F467\u200D\U0001F466",  # family (ZWJ sequence)
    "\U0001F44D\U0001F3FD",  # thumbs up, skin tone
    "\U0001F1E8\U0001F1F3\U0001F1EF\U0001F1F5",  # flags (regional indicators)
    "\u2764\uFE0F", "\U0001F3F3\uFE0F\u200D\U0001F308", "#\uFE0F\u20E3",
    "\U0001F3F4\U000E0067\U000E0062\U000E0073\U000E0063\U000E0074\U000E007F",  # tag sequence flag
]
WHITESPACE = [" ", "\t", "\n", "\r", "\u00A0", "\u1680", "\u2002", "\u2009", "\u200B", "\u2028", "\u2029",
              "\u202F", "\u205F", "\u3000", "\u000B", "\u000C", "\u0085", "\uFEFF"]
SPECIAL = ["[SEP]", "[CLS]", "[PAD]", "[UNK]", "[MASK]", "##s", "[sep]", "[ CLS ]", "[SEP][SEP]", "[CLS]x"]
WORDS = ["the", "cat", "sat", "on", "mat", "good", "bad", "movie", "hotel", "very", "not", "running",
         "unaffable", "caf\u00e9", "na\u00efve", "\u4e2d\u6587", "\u9152\u5e97", "\u3053\u3093\u306b\u3061\u306f",
         "\ud55c\uad6d\uc5b4", "\u0645\u0631\u062d\u0628\u0627", "\u05e9\u05dc\u05d5\u05dd", "stra\u00dfe",
         "\uff0c", "\u3002", "\uff01", "\uff1f", "\uff1a", "\ufb01", "\u2163", "\u00bd", "Dvo\u0159\u00e1k"]
INVALID_UTF8 = [b"\xff", b"\xfe", b"\xc3", b"\xe4\xb8", b"\xf0\x9f\x98", b"\x80", b"\xbf", b"\xc0\x80",
                b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\xf8\x88\x80\x80\x80", b"\xe0\x80\xaf"]


def random_char(rng: np.random.Generator) -> str:
    """One code point from a random range (no surrogates: they cannot be UTF-8 encoded)."""
    lo, hi = RANGES[rng.integers(len(RANGES))]
    cp = int(rng.integers(lo, hi + 1))
    return chr(0xFFFD if 0xD800 <= cp <= 0xDFFF else cp)


def random_unicode(rng: np.random.Generator, max_chars: int = 40) -> bytes:
    """Code points from all planes mixed with words, emoji sequences, spaces and special tokens."""
    pieces = []
    for _ in range(int(rng.integers(1, max_chars + 1))):
        kind = rng.random()
        if kind < 0.55:
            pieces.append(random_char(rng))
        elif kind < 0.75:
            pieces.append(WORDS[rng.integers(len(WORDS))])
        elif kind < 0.85:
            pieces.append(WHITESPACE[rng.integers(len(WHITESPACE))])
        elif kind < 0.93:
            pieces.append(EMOJI_SEQUENCES[rng.integers(len(EMOJI_SEQUENCES))])
        else:
            pieces.append(SPECIAL[rng.integers(len(SPECIAL))])
        if rng.random() < 0.3:
            pieces.append(" ")
    return "".join(pieces).encode("utf-8")


def invalid_utf8(rng: np.random.Generator, max_bytes: int = 40) -> bytes:
    """Valid text with malformed sequences spliced in, or plain random bytes."""
    if rng.random() < 0.3:
        return rng.bytes(int(rng.integers(1, max_bytes + 1)))
    pieces = [random_unicode(rng, 8)]
    for _ in range(int(rng.integers(1, 4))):
        pieces.append(INVALID_UTF8[rng.integers(len(INVALID_UTF8))])
        pieces.append(random_unicode(rng, 4))
    return b"".join(pieces)


def whitespace_only(rng: np.random.Generator) -> bytes:
    """1-11 white-space (and zero-width) characters, nothing else."""
    return "".join(WHITESPACE[i] for i in rng.integers(len(WHITESPACE), size=int(rng.integers(1, 12)))).encode()


def special_tokens(rng: np.random.Generator) -> bytes:
    """`[SEP]`, `[CLS]` and friends written as text, alone or among words."""
    words = [SPECIAL[rng.integers(len(SPECIAL))] if rng.random() < 0.5 else WORDS[rng.integers(len(WORDS))]
             for _ in range(int(rng.integers(1, 10)))]
    return " ".join(words).encode("utf-8")


def words(rng: np.random.Generator, max_words: int = 80) -> bytes:
    """Words of the generator's word list, long enough to cross the sequence limit."""
    return " ".join(WORDS[i] for i in rng.integers(len(WORDS), size=int(rng.integers(1, max_words)))).encode()


def huge(rng: np.random.Generator, size: int = MEGABYTE) -> bytes:
    """A `size`-byte string: words, one endless word, CJK without spaces, or random Unicode repeated."""
    kind = int(rng.integers(4))
    if kind == 0:
        unit = words(rng, 20) + b" "
    elif kind == 1:
        unit = b"a"
    elif kind == 2:
        unit = "\u9152\u5e97\u5f88\u597d\uff0c".encode()
    else:
        unit = random_unicode(rng, 30)
    return (unit * (size // len(unit) + 1))[:size]


KINDS: dict[str, Callable[[np.random.Generator], bytes]] = {
    "unicode": random_unicode,
    "invalid_utf8": invalid_utf8,
    "empty": lambda rng: b"",
    "whitespace": whitespace_only,
    "special_tokens": special_tokens,
    "words": words,
}
WEIGHTS = np.array([0.45, 0.15, 0.08, 0.08, 0.09, 0.15])


def one_text(rng: np.random.Generator) -> bytes:
    """One input of a random kind (1 MB strings are added by `batches`, not here: they are slow)."""
    return KINDS[list(KINDS)[rng.choice(len(KINDS), p=WEIGHTS / WEIGHTS.sum())]](rng)


def batches(seed: int, examples: int, max_batch: int = 64, huge_every: int = 2500,
            pair: bool = False) -> list[tuple[list[bytes], list[bytes] | None]]:
    """Batches of 0-`max_batch` texts, `examples` texts in all, one 1 MB text per `huge_every`.

    Args:
        seed: the random seed; the same seed gives the same batches.
        examples: the number of texts (pairs count one per pair) to generate.
        max_batch: the largest batch; every size from 0 up is drawn, empty batches included.
        huge_every: one 1 MB string among this many texts (at least one whenever `examples` > 0).
        pair: also draw a second text per row; one side is empty in about a quarter of the pairs.

    Returns:
        `[(texts, text_pairs or None)]`.
    """
    rng = np.random.default_rng(seed)
    huge_at = set(rng.choice(examples, size=max(1, examples // huge_every), replace=False).tolist()) \
        if examples else set()
    out: list[tuple[list[bytes], list[bytes] | None]] = [([], [] if pair else None)]  # batch 0 always
    made = 0
    while made < examples:
        size = min(int(rng.integers(0, max_batch + 1)), examples - made)
        texts = [one_text(rng) for _ in range(size)]
        seconds = [one_text(rng) for _ in range(size)] if pair else None
        for i in range(size):
            if pair and rng.random() < 0.25:
                (texts if rng.random() < 0.5 else seconds)[i] = b""
            if made + i in huge_at:
                texts[i] = huge(rng)
        out.append((texts, seconds))
        made += size
    return out
