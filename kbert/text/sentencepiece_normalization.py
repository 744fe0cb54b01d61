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
they change (a few ten thousand), and `kbert.text.albert_normalizer.AlbertNormalizer` looks the input's code
points up in that table (steps 2-4 and 5's spaces) and finds step 1's pairs with array operations. The result goes to
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

# Unicode White_Space: HF's `WhitespaceSplit` (Rust's `char::is_whitespace`) splits words at these.
WHITE_SPACE = frozenset([*range(0x9, 0xE), 0x20, 0x85, 0xA0, 0x1680, *range(0x2000, 0x200B), 0x2028, 0x2029,
                         0x202F, 0x205F, 0x3000])
# Printable ASCII with tab, newline and carriage return: unless the model maps them, lower-casing and spaces
# for the three are all that normalisation does to these strings (`AlbertNormalizer`'s plain route).
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
