"""Classification examples from local CSV, TSV (GLUE layout) and JSONL files.

Columns are named by the header row, or numbered from 0 (`header=False`, e.g. GLUE's raw CoLA TSVs,
which have no header; a number also picks a column of a file with a header). Each example is
`{"text": str, "text_pair": str | None, "label": str | float | None}`. Bad rows raise a ValueError that
names the file and line. Python's `csv` module does the parsing; the row checks are ours
because neither `csv` nor `tf.data.experimental.make_csv_dataset` reports the offending line.
"""

from __future__ import annotations

import csv
import json
import math
import os
from typing import Any, Iterator, Sequence

import kbert.file_io as file_io
from kbert.tasks.example import Example

_FORMATS = {".csv": "csv", ".tsv": "tsv", ".tab": "tsv", ".jsonl": "jsonl", ".ndjson": "jsonl"}


def classification_file_format(path: str | os.PathLike) -> str:
    """"csv", "tsv" or "jsonl" from the file extension; ValueError for anything else."""
    extension = os.path.splitext(os.fspath(path))[1].lower()
    if extension not in _FORMATS:
        raise ValueError(
            f"{os.fspath(path)}: cannot tell the format from the extension {extension!r}; "
            f"use one of {sorted(_FORMATS)} or pass file_format='csv'|'tsv'|'jsonl'"
        )
    return _FORMATS[extension]


def _delimited_rows(path: str, file_format: str, header: bool = True
                    ) -> Iterator[tuple[int, dict[str | int, Any]]]:
    """(line number, row dict) pairs, keyed by column name and by 0-based column number.

    With a header, line 1 is the header and yields `{"__header__": names}`; without one, the first row's
    width is the file's. Short rows get None for missing fields; a longer row is an error.
    """
    with file_io.text_stream(path, "utf-8-sig", newline="") as handle:
        if file_format == "tsv":
            # GLUE TSVs are unquoted: a stray '"' in a sentence is text, not a quote (QUOTE_NONE).
            reader = csv.reader(handle, delimiter="\t", quoting=csv.QUOTE_NONE)
        else:
            reader = csv.reader(handle)
        names: list[str] = []
        if header:
            first = next(reader, None)
            if first is None:
                raise ValueError(f"{path}:1: the file is empty (expected a header row)")
            names = [name.strip() for name in first]
            yield 1, {"__header__": names}
        width = len(names) if header else None
        previous_end = reader.line_num
        for row in reader:
            line, previous_end = previous_end + 1, reader.line_num
            if not row or (len(row) == 1 and not row[0].strip()):
                continue
            width = len(row) if width is None else width
            if len(row) > width:
                what = "the header has" if header else "the first row has"
                raise ValueError(f"{path}:{line}: {len(row)} fields but {what} {width}")
            values: dict[str | int, Any] = {i: (row[i] if i < len(row) else None) for i in range(width)}
            values.update({name: values[i] for i, name in enumerate(names)})
            yield line, values


def jsonl_rows(path: str | os.PathLike) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) for each non-blank line of a JSON-lines file; ValueError names a bad line."""
    path = os.fspath(path)
    with file_io.text_stream(path, "utf-8-sig") as handle:
        for line_number, line in enumerate(handle, start=1):
            if line.strip():
                yield line_number, json_object(path, line_number, line)


def json_object(path: str, line_number: int, line: str) -> dict[str, Any]:
    """One line of a JSON-lines file as its object; ValueError naming `path:line_number` otherwise."""
    try:
        row = json.loads(line)
    except json.JSONDecodeError as error:
        raise ValueError(f"{path}:{line_number}: invalid JSON ({error.msg})") from None
    if not isinstance(row, dict):
        raise ValueError(f"{path}:{line_number}: expected a JSON object, got {type(row).__name__}")
    return row


def _text(path: str, line: int, row: dict[str | int, Any], column: str | int) -> str:
    value = row.get(column)
    if value is None:
        raise ValueError(f"{path}:{line}: missing column {column!r}")
    if not isinstance(value, str):
        raise ValueError(f"{path}:{line}: column {column!r} is {type(value).__name__}, not text")
    if not value.strip():
        raise ValueError(f"{path}:{line}: empty text in column {column!r}")
    return value


def _label(
    path: str, line: int, row: dict[str | int, Any], column: str | int, labels: Sequence[str] | None,
    regression: bool,
) -> str | float:
    value = row.get(column)
    if value is None:
        raise ValueError(f"{path}:{line}: missing column {column!r}")
    if isinstance(value, str) and not value.strip():
        raise ValueError(f"{path}:{line}: empty label in column {column!r}")
    if regression:
        try:
            number = float(value)
        except (TypeError, ValueError):
            raise ValueError(f"{path}:{line}: label {value!r} is not a number (regression)") from None
        if not math.isfinite(number):
            raise ValueError(f"{path}:{line}: label {value!r} is not a finite number")
        return number
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise ValueError(f"{path}:{line}: label {value!r} is not a string or integer")
    label = str(value).strip()
    if labels is not None and label not in labels:
        raise ValueError(f"{path}:{line}: unknown label {label!r}; expected one of {list(labels)}")
    return label


def read_classification_file(
    path: str | os.PathLike,
    *,
    text_column: str | int = "text",
    text_pair_column: str | int | None = None,
    label_column: str | int | None = "label",
    labels: Sequence[str] | None = None,
    regression: bool = False,
    file_format: str | None = None,
    header: bool = True,
) -> list[Example]:
    """Reads a CSV, TSV or JSONL file of (text, optional text pair, label) rows.

    Args:
        path: str or PathLike. The file; the format comes from the extension (.csv, .tsv, .jsonl).
        text_column: str or int. Column holding the first text: a header name or a 0-based number.
        text_pair_column: str, int or None. Column holding the second text, for sentence-pair tasks.
        label_column: str, int or None. Column holding the label; None for unlabelled files (label None).
        labels: optional sequence of str. Allowed labels; any other label is an error.
        regression: bool. Parse labels as floats (STS-B) instead of class names.
        file_format: optional "csv", "tsv" or "jsonl", overriding the extension.
        header: bool. The first line of a CSV / TSV file names the columns; False reads every line as
            data and takes columns by number (GLUE's raw CoLA: `header=False, text_column=3,
            label_column=1`).

    Returns:
        list of {"text": str, "text_pair": str | None, "label": str | float | None}. Class labels are
        strings (JSON integers become "0", "1", ...).

    Raises:
        ValueError naming the file and line for a missing column, empty text, a label outside `labels`,
        or an unparsable regression label; FileNotFoundError for a missing file.

    Example:
    >>> import tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "train.tsv"
    >>> _ = path.write_text("sentence\\tlabel\\ngood film\\t1\\n")
    >>> read_classification_file(path, text_column="sentence")
    [{'text': 'good film', 'text_pair': None, 'label': '1'}]
    """
    path = os.fspath(path)
    file_format = file_format or classification_file_format(path)
    if file_format not in ("csv", "tsv", "jsonl"):
        raise ValueError(f"file_format must be 'csv', 'tsv' or 'jsonl', got {file_format!r}")
    columns = (text_column, text_pair_column, label_column)
    if file_format == "jsonl":
        if any(isinstance(column, int) for column in columns):
            raise ValueError(f"{path}: JSON lines name their fields; give column names, not numbers")
        rows = jsonl_rows(path)
    else:
        rows = _delimited_rows(path, file_format, header)
    examples: list[Example] = []
    for line, row in rows:
        if "__header__" in row:
            names = row["__header__"]
            for column in columns:
                if isinstance(column, int) and not 0 <= column < len(names):
                    raise ValueError(f"{path}:1: no column {column} in the {len(names)} columns of the header")
                if isinstance(column, str) and column not in names:
                    raise ValueError(f"{path}:1: no column {column!r} in the header {names}")
            continue
        examples.append(
            {
                "text": _text(path, line, row, text_column),
                "text_pair": _text(path, line, row, text_pair_column) if text_pair_column is not None else None,
                "label": (_label(path, line, row, label_column, labels, regression)
                          if label_column is not None else None),
            }
        )
    return examples


def is_text_lines(path: str | os.PathLike) -> bool:
    """Whether `path` is a plain text file (`.txt`): one text a line, as `read_text_lines` reads it."""
    return os.path.splitext(os.fspath(path))[1].lower() == ".txt"


def read_text_lines(path: str | os.PathLike) -> list[str]:
    """The non-blank lines of a UTF-8 text file, stripped: one text a line.

    Example:
    >>> import tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "texts.txt"
    >>> _ = path.write_text("a good film\\n\\n  a bad one \\n")
    >>> read_text_lines(path)
    ['a good film', 'a bad one']
    """
    lines = (line.decode("utf-8").strip() for line in file_io.iter_lines(os.fspath(path)))
    return [line for line in lines if line]
