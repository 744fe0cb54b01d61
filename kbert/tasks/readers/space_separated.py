"""Token-tagging examples in the layout of Chinese BERT toolkits: one sentence per TSV row.

A row is `tokens<TAB>tags`: the tokens (for Chinese NER, one character each) separated by spaces, then one
entity tag per token (IOB2, also IOB1 or IOBES) separated by spaces; an optional header row names the two
columns (MSRA NER: `text_a<TAB>label`). Each row becomes `{"words": [...], "tags": [...]}`, so every
character is one word and the tagging pipeline tokenizes and aligns it like a CoNLL word. Written here
because the layout is neither CoNLL columns nor a classification TSV, and a bad row must be named by file
and line.
"""

from __future__ import annotations

import os

import kbert.file_io as file_io
from kbert.tasks.example import Example
from kbert.tasks.readers.conll import tag_parts

TAG_FORMATS = ("conll", "spaces")
_SNIFF_ROWS = 20


def _items(column: str) -> list[str]:
    # Split on the ASCII space only: an ideographic space (U+3000) may be a token of its own.
    return [item for item in column.strip("\r\n ").split(" ") if item]


def _is_tag(text: str) -> bool:
    try:
        tag_parts(text)
    except ValueError:
        return False
    return True


def detect_tag_format(path: str | os.PathLike) -> str:
    """"spaces" for a .tsv whose first rows have two tab-separated columns with equally many
    space-separated items (more than one in some row), "conll" otherwise.

    Example:
    >>> import tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "dev.tsv"
    >>> _ = path.write_text("text_a\\tlabel\\n北 京\\tB-LOC I-LOC\\n", encoding="utf-8")
    >>> detect_tag_format(path)
    'spaces'
    """
    path = os.fspath(path)
    if os.path.splitext(path)[1].lower() != ".tsv":
        return "conll"
    rows = longest = 0
    with file_io.text_stream(path, "utf-8-sig") as handle:
        for line in handle:
            if not line.strip():
                continue
            columns = line.rstrip("\r\n").split("\t")
            if len(columns) != 2 or len(_items(columns[0])) != len(_items(columns[1])):
                return "conll"
            longest = max(longest, len(_items(columns[0])))
            rows += 1
            if rows == _SNIFF_ROWS:
                break
    # Rows of one item each are a token per line (`token<TAB>tag`): CoNLL columns.
    return "spaces" if longest > 1 else "conll"


def read_space_separated_tags(path: str | os.PathLike) -> list[Example]:
    """Reads sentences from a `tokens<TAB>tags` TSV (MSRA NER as Chinese BERT toolkits ship it).

    Args:
        path: str or PathLike. The file (UTF-8). A first row whose tag column is not a tag (e.g.
            `text_a<TAB>label`) is a header and is skipped; blank lines are skipped.

    Returns:
        list of {"words": list[str], "tags": list[str]}, one per row, in file order.

    Raises:
        ValueError naming the file and line for a row without exactly two tab-separated columns, an
        empty column, different numbers of tokens and tags, or a tag that is neither "O" nor
        B-/I-/E-/S- followed by a type.

    Example:
    >>> import tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "dev.tsv"
    >>> _ = path.write_text("text_a\\tlabel\\n去 北 京\\tO B-LOC I-LOC\\n", encoding="utf-8")
    >>> read_space_separated_tags(path)
    [{'words': ['去', '北', '京'], 'tags': ['O', 'B-LOC', 'I-LOC']}]
    """
    path = os.fspath(path)
    examples: list[Example] = []
    with file_io.text_stream(path, "utf-8-sig") as handle:
        for line_number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            columns = line.rstrip("\r\n").split("\t")
            if len(columns) != 2:
                raise ValueError(f"{path}:{line_number}: {len(columns)} tab-separated column(s), expected 2 "
                                 "(tokens, then tags, each separated by spaces)")
            words, tags = _items(columns[0]), _items(columns[1])
            if line_number == 1 and len(tags) == 1 and not _is_tag(tags[0]):
                continue  # the header row, e.g. text_a<TAB>label
            if not words or not tags:
                raise ValueError(f"{path}:{line_number}: empty {'token' if not words else 'tag'} column")
            if len(words) != len(tags):
                raise ValueError(f"{path}:{line_number}: {len(words)} tokens but {len(tags)} tags")
            for position, tag in enumerate(tags, start=1):
                if not _is_tag(tag):
                    raise ValueError(f"{path}:{line_number}: tag {position} ({tag!r}, on token "
                                     f"{words[position - 1]!r}) is neither 'O' nor B-/I-/E-/S- followed by a type")
            examples.append({"words": words, "tags": tags})
    return examples
