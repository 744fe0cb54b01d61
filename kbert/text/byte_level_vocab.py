"""Byte-level BPE vocabularies (GPT-2 / RoBERTa `vocab.json` + `merges.txt`): files, checks, tables.

A byte-level vocabulary spells every byte as one printable character (the GPT-2 convention: printable
Latin-1 bytes stand for themselves, the other 68 bytes for U+0100 onwards, so the space byte is "Ġ" and
the newline "Ċ"), so tokens and merge rules are plain strings. These functions are TensorFlow-free; the
tokenizer turns their tables into graph constants.
"""

from __future__ import annotations

import json
import os

import kbert.file_io as file_io
from kbert.text.text_files import DEFAULT_ENCODING_ERRORS, check_encoding_errors, read_lines

VOCAB_FILE, MERGES_FILE = "vocab.json", "merges.txt"
MERGES_HEADER = "#version: 0.2"
# RoBERTa's special tokens. <s> opens a sequence ([CLS]), </s> closes a segment ([SEP]).
BOS, EOS, PAD, UNK, MASK = "<s>", "</s>", "<pad>", "<unk>", "<mask>"
REQUIRED_SPECIAL_TOKENS = (BOS, EOS, PAD)


def byte_alphabet() -> list[str]:
    """The character that spells each byte 0-255 in a byte-level vocabulary.

    Example:
    >>> alphabet = byte_alphabet()
    >>> alphabet[ord("a")], alphabet[ord(" ")], alphabet[ord("\\n")], len(set(alphabet))
    ('a', 'Ġ', 'Ċ', 256)
    """
    printable = [b for b in range(256) if 0x21 <= b <= 0x7E or 0xA1 <= b <= 0xAC or 0xAE <= b <= 0xFF]
    others = [b for b in range(256) if b not in set(printable)]
    chars = {b: chr(b) for b in printable}
    chars.update({b: chr(0x100 + i) for i, b in enumerate(others)})
    return [chars[b] for b in range(256)]


_BYTE_OF = {c: b for b, c in enumerate(byte_alphabet())}


def token_bytes(token: str) -> bytes:
    """The bytes a token stands for; a token with characters outside the byte alphabet (an added token
    such as "<mask>" is inside it) is taken as its own UTF-8 text."""
    if all(c in _BYTE_OF for c in token):
        return bytes(_BYTE_OF[c] for c in token)
    return token.encode("utf-8")


def read_vocab_json(path: str | os.PathLike) -> list[str]:
    """The tokens of a `vocab.json` (`{token: id}`) in id order; the ids must be 0..n-1."""
    path = file_io.fspath(path)
    if not file_io.isfile(path):
        raise FileNotFoundError(f"vocabulary file not found: {path}")
    mapping = file_io.read_json(path)
    if not isinstance(mapping, dict):
        raise ValueError(f"{path}: expected a JSON object {{token: id}}, got {type(mapping).__name__}")
    try:
        return tokens_in_id_order(mapping)
    except ValueError as err:
        raise ValueError(f"{path}: {err}") from err


def tokens_in_id_order(mapping: dict[str, int]) -> list[str]:
    """`{token: id}` as a list indexed by id; ValueError naming the first gap or repeated id."""
    tokens: list[str | None] = [None] * len(mapping)
    for token, index in mapping.items():
        if not isinstance(index, int) or not 0 <= index < len(mapping):
            raise ValueError(f"token {token!r} has id {index!r}; ids must be 0..{len(mapping) - 1}")
        if tokens[index] is not None:
            raise ValueError(f"id {index} is given to both {tokens[index]!r} and {token!r}")
        tokens[index] = token
    return tokens  # type: ignore[return-value]


def read_merges(path: str | os.PathLike) -> list[str]:
    """The merge rules of a `merges.txt`, one "left right" a line, in rank order (header and blank lines
    left out)."""
    path = file_io.fspath(path)
    if not file_io.isfile(path):
        raise FileNotFoundError(f"merges file not found: {path}")
    lines = file_io.read_text(path).split("\n")
    return [line.rstrip("\r") for line in lines if line.rstrip("\r") and not line.startswith("#version")]


def merge_table(tokens: list[str], merges: list[str]) -> dict[tuple[int, int], tuple[int, int]]:
    """`{(left id, right id): (rank, merged id)}` of merge rules in rank order.

    A rule given twice keeps its later rank (as HF `tokenizers` does). ValueError names a rule that is
    malformed, whose tokens are not in the vocabulary, or that uses a token before the last rule that
    makes it: learned merges never do, and the tokenizer's all-occurrences-at-once merging (the same ids
    as HF's one-at-a-time merging for learned merges) relies on it.
    """
    index = {token: i for i, token in enumerate(tokens)}
    table: dict[tuple[int, int], tuple[int, int]] = {}
    for rank, rule in enumerate(merges):
        parts = rule.split(" ")
        if len(parts) != 2 or not all(parts):
            raise ValueError(f"merge rule {rank + 1} is not two tokens separated by one space: {rule!r}")
        left, right = parts
        missing = [t for t in (left, right, left + right) if t not in index]
        if missing:
            raise ValueError(f"merge rule {rank + 1} ({rule!r}) needs {missing[0]!r}, which is not in the vocabulary")
        table[(index[left], index[right])] = (rank, index[left + right])
    made_at: dict[int, int] = {}
    for rank, merged in table.values():
        made_at[merged] = max(rank, made_at.get(merged, -1))
    for (left, right), (rank, _) in table.items():
        for part in (left, right):
            if made_at.get(part, -1) > rank:
                raise ValueError(f"merge rule {rank + 1} uses {tokens[part]!r}, which rule {made_at[part] + 1} makes "
                                 "later: not a learned merges order")
    return table


def bpe(symbols: list[int], rules: dict[tuple[int, int], int]) -> list[int]:
    """Byte-pair merging of one word: while a pair of neighbours has a rule, every occurrence (left to
    right) of the lowest-ranked one becomes its merged token.

    Args:
        symbols: the word's ids (one per byte).
        rules: `{(left, right): rank << 32 | merged id}` (rank first, so the lowest value is the rule).

    Example:
    >>> bpe([1, 2, 1, 2], {(1, 2): 3, (3, 3): (1 << 32) | 4})
    [4]
    """
    get = rules.get
    while len(symbols) > 1:
        found = [v for v in map(get, zip(symbols, symbols[1:])) if v is not None]
        if not found:
            break
        best = min(found)
        out, i, n = [], 0, len(symbols)
        while i < n:
            if i + 1 < n and get((symbols[i], symbols[i + 1])) == best:
                out.append(best & 0xFFFFFFFF)
                i += 2
            else:
                out.append(symbols[i])
                i += 1
        symbols = out
    return symbols


def whole_word_tokens(tokens: list[str], table: dict, byte_ids: list[int]) -> list[tuple[bytes, int]]:
    """`(bytes, id)` of every token that byte-pair merging of its own bytes gives back whole.

    A word with those bytes is that one token, so the tokenizer looks such words up instead of merging.
    Special and added tokens (not reachable by the rules) are left out. About a second for 50k tokens.
    """
    rules = {pair: (rank << 32) | merged for pair, (rank, merged) in table.items()}
    out = []
    for i, token in enumerate(tokens):
        if all(c in _BYTE_OF for c in token):
            raw = token_bytes(token)
            if bpe([byte_ids[b] for b in raw], rules) == [i]:
                out.append((raw, i))
    return out


def write_vocabulary(directory: str | os.PathLike, tokens: list[str], merges: list[str]) -> str:
    """Writes `vocab.json` and `merges.txt` into `directory` (created); returns the vocab.json path."""
    file_io.makedirs(directory)
    path = file_io.join(directory, VOCAB_FILE)
    file_io.write_json(path, {token: i for i, token in enumerate(tokens)}, indent=None, ensure_ascii=False)
    file_io.write_text(file_io.join(directory, MERGES_FILE), "\n".join([MERGES_HEADER, *merges]) + "\n")
    return path


def learn_byte_level_bpe(
    files: list[str | os.PathLike],
    size: int,
    min_count: int = 2,
    verbose: bool = True,
    encoding_errors: str = DEFAULT_ENCODING_ERRORS,
) -> tuple[list[str], list[str]]:
    """Learns a byte-level BPE vocabulary (RoBERTa's layout) from text files, one text a line.

    HF `tokenizers`' `ByteLevelBPETokenizer` trainer does the learning (with GPT-2's splitting, the same
    as `ByteLevelBpeTokenizer`'s); lines are read here (any TF path, `encoding_errors` as `kbert vocab`).

    Args:
        files: text files.
        size: the vocabulary size, all 256 bytes and `<s> <pad> </s> <unk>` (ids 0-3) and `<mask>` (the
            last id) included; the trainer may stop short of it on a small text.
        min_count: pairs seen fewer times are not merged.
        verbose: show the trainer's progress bar.
        encoding_errors: "strict", "replace" (default) or "ignore" for bytes that are not UTF-8.

    Returns:
        (tokens in id order, merge rules in rank order).

    Example:
    >>> tokens, merges = learn_byte_level_bpe(["corpus.txt"], size=8000)  # doctest: +SKIP
    """
    from tokenizers import ByteLevelBPETokenizer

    check_encoding_errors(encoding_errors)
    specials = [BOS, PAD, EOS, UNK]
    if size < 256 + len(specials) + 2:
        raise ValueError(f"size must be at least {256 + len(specials) + 2} (256 bytes, 5 special tokens, a merge), "
                         f"got {size}")
    paths = [file_io.fspath(f) for f in files]
    for path in paths:
        if not file_io.isfile(path):
            raise FileNotFoundError(f"vocabulary input not found: {path}")
    trainer = ByteLevelBPETokenizer()
    lines = (line for path in paths for line in read_lines(path, encoding_errors))
    trainer.train_from_iterator(lines, vocab_size=size - 1, min_frequency=min_count, show_progress=verbose,
                                special_tokens=specials)
    model = json.loads(trainer.to_str())["model"]  # the trained BPE: vocabulary, merges in rank order
    merges = [rule if isinstance(rule, str) else " ".join(rule) for rule in model["merges"]]
    return [*tokens_in_id_order(model["vocab"]), MASK], merges
