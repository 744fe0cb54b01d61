"""Token-tagging examples from CoNLL column files, and IOB1 -> IOB2 conversion.

A CoNLL file has one token per line with whitespace-separated columns (CoNLL-2003: `token POS chunk NER`),
a blank line between sentences, and `-DOCSTART-` lines between documents (skipped). Each sentence becomes
`{"words": [...], "tags": [...]}`. Written here: tfds reads only its own prepared datasets, and a
malformed line must be reported with its file and line number.
"""

from __future__ import annotations

import os
from typing import Iterable, Sequence

import kbert.file_io as file_io
from kbert.tasks.example import Example

# Column names for the CoNLL-2003 layout `token POS chunk NER`; the same names work for tfds conll2003.
CONLL_COLUMNS = {"ner": -1, "pos": 1, "chunk": 2, "chunks": 2}


def _column_index(tag_column: str | int) -> int:
    if isinstance(tag_column, int):
        return tag_column
    if tag_column not in CONLL_COLUMNS:
        raise ValueError(f"tag_column must be an int or one of {sorted(CONLL_COLUMNS)}, got {tag_column!r}")
    return CONLL_COLUMNS[tag_column]


def read_conll(
    path: str | os.PathLike, *, tag_column: str | int = "ner", token_column: int = 0
) -> list[Example]:
    """Reads sentences from a CoNLL column file.

    Args:
        path: str or PathLike. The file (UTF-8).
        tag_column: int or str. Column of the tags: an index (negative counts from the end) or a
            CoNLL-2003 name: "ner" (last column), "pos" (column 1), "chunk" (column 2).
        token_column: int. Column of the words (0).

    Returns:
        list of {"words": list[str], "tags": list[str]}, one per sentence, in file order.

    Raises:
        ValueError naming the file and line when a line has fewer columns than needed or a different
        number of columns than the file's first token line.

    Example:
    >>> import tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "train.txt"
    >>> _ = path.write_text("-DOCSTART- -X- -X- O\\n\\nEU NNP B-NP B-ORG\\nrejects VBZ B-VP O\\n")
    >>> read_conll(path)
    [{'words': ['EU', 'rejects'], 'tags': ['B-ORG', 'O']}]
    """
    path = os.fspath(path)
    column = _column_index(tag_column)
    needed = max(column + 1 if column >= 0 else -column, token_column + 1)
    examples: list[Example] = []
    words: list[str] = []
    tags: list[str] = []
    width: int | None = None

    def flush() -> None:
        if words:
            examples.append({"words": list(words), "tags": list(tags)})
            words.clear()
            tags.clear()

    with file_io.text_stream(path, "utf-8-sig") as handle:
        for line_number, line in enumerate(handle, start=1):
            fields = line.split()
            if not fields:
                flush()
                continue
            if fields[0] == "-DOCSTART-":
                flush()
                continue
            if len(fields) < needed:
                raise ValueError(
                    f"{path}:{line_number}: {len(fields)} column(s), need at least {needed} for "
                    f"token column {token_column} and tag column {tag_column!r}: {line.rstrip()!r}"
                )
            if width is None:
                width = len(fields)
            elif len(fields) != width:
                raise ValueError(
                    f"{path}:{line_number}: {len(fields)} columns but earlier lines have {width}: "
                    f"{line.rstrip()!r}"
                )
            words.append(fields[token_column])
            tags.append(fields[column])
    flush()
    return examples


def tag_parts(tag: str) -> tuple[str, str]:
    """("B", "PER") for "B-PER", ("O", "") for "O"; ValueError for anything else."""
    if tag == "O":
        return "O", ""
    prefix, sep, entity_type = tag.partition("-")
    if not sep or prefix not in ("B", "I", "E", "S") or not entity_type:
        raise ValueError(f"tag {tag!r} is neither 'O' nor B-/I-/E-/S- followed by a type")
    return prefix, entity_type


def iob1_to_iob2(tags: Sequence[str]) -> list[str]:
    """Rewrites one sentence's IOB1 tags as IOB2: every entity starts with B-.

    An I-X tag that opens an entity (first word, after O, or after another type) becomes B-X. IOB2 input
    comes back unchanged, so the function is safe to apply to either scheme.

    Args:
        tags: sequence of str. "O", "B-TYPE" or "I-TYPE" tags of one sentence.

    Returns:
        list of str, the IOB2 tags.

    Example:
    >>> iob1_to_iob2(["I-PER", "I-PER", "O", "I-LOC", "B-LOC"])
    ['B-PER', 'I-PER', 'O', 'B-LOC', 'B-LOC']
    """
    converted = []
    previous_prefix, previous_type = "O", ""
    for tag in tags:
        prefix, entity_type = tag_parts(tag)
        if prefix in ("E", "S"):
            raise ValueError(f"tag {tag!r} is IOBES, not IOB1")
        if prefix == "I" and (previous_prefix == "O" or previous_type != entity_type):
            tag = f"B-{entity_type}"
        converted.append(tag)
        previous_prefix, previous_type = prefix, entity_type
    return converted


def detect_tagging_scheme(tag_sequences: Iterable[Sequence[str]]) -> str:
    """Tells IOB1 from IOB2 (or IOBES) tagging.

    IOB1 opens entities with I- and uses B- only between two adjacent entities of one type; IOB2 opens
    every entity with B-.

    Args:
        tag_sequences: iterable of sentences, each a sequence of tags.

    Returns:
        "IOB1" if some entity opens with I- and none breaks IOB1; "IOB2" if no entity opens with I-
        (also when there are no entities, where both schemes agree); "IOBES" if E-/S- tags occur;
        "mixed" if both IOB1 and IOB2 openings occur.

    Example:
    >>> detect_tagging_scheme([["I-PER", "O", "I-LOC", "B-LOC"]])
    'IOB1'
    """
    opens_with_i = opens_with_b_iob2_only = False
    for tags in tag_sequences:
        previous_prefix, previous_type = "O", ""
        for tag in tags:
            prefix, entity_type = tag_parts(tag)
            if prefix in ("E", "S"):
                return "IOBES"
            continues = previous_prefix != "O" and previous_type == entity_type
            if prefix == "I" and not continues:
                opens_with_i = True
            if prefix == "B" and not continues:
                opens_with_b_iob2_only = True  # IOB1 allows B- only right after the same type
            previous_prefix, previous_type = prefix, entity_type
    if opens_with_i and opens_with_b_iob2_only:
        return "mixed"
    return "IOB1" if opens_with_i else "IOB2"
