"""The rows of a corpus file to embed (JSONL, CSV, TSV or Parquet), each with its id and text or its problem.

Every data row of a file comes out as one `Row`, in file order: either a row to embed, or a row that is
skipped and counted, with the reason in `problem` (one of `PROBLEMS`) and where it is in `message`:

- "bad_utf8": the text or the id is not valid UTF-8 (undecodable bytes, or a JSON `\\ud800` escape that
  no UTF-8 text can hold);
- "empty_text": no text (the field is absent, null, not a string, or only whitespace);
- "missing_id": no id (absent, null, empty, or neither a string nor an integer);
- "duplicate_id" is not decided here: the caller keeps the first row of each id in input order.

A file that cannot be read as a whole is an error (ValueError naming the file and line): invalid JSON, a
line that is not a JSON object, a CSV/TSV without the named columns in its header row, a CSV row longer
than its header. Bytes are decoded with `surrogateescape`, so one bad byte costs its row, not the file.

A row's place is its file's index in the input list and its 0-based data-row index in the file (blank
lines are not rows); `message` names `path:line` (for Parquet, `path:N`, the 1-based row).

Python's `csv` and `json` parse (a JSON line as `kbert.tasks.readers` parses it); pyarrow reads Parquet
(it comes with Apache Beam). The rows are checked here rather than by `kbert.tasks.readers`' file readers
because those decode a whole file strictly and raise on the first bad row, and a corpus to embed counts them.

Example:
    >>> import kbert.file_io as file_io
    >>> file_io.write_bytes("ram://kbert-rows/a.jsonl",
    ...                     b'{"id": 1, "text": "hi"}\\n{"id": 2, "text": " "}\\n{"id": 3, "text": "\\xff"}\\n')
    >>> [(r.id, r.text, r.problem) for r in read_rows("ram://kbert-rows/a.jsonl", 0, "text", "id")]
    [('1', 'hi', None), ('2', None, 'empty_text'), ('3', None, 'bad_utf8')]
"""

from __future__ import annotations

import csv
import io
import os
from collections.abc import Iterator
from typing import Any, NamedTuple

import kbert.file_io as file_io
from kbert.tasks.readers.local_files import json_object

PROBLEMS = ("bad_utf8", "empty_text", "missing_id", "duplicate_id")
FILE_FORMATS = ("jsonl", "csv", "tsv", "parquet")
_EXTENSIONS = {".jsonl": "jsonl", ".ndjson": "jsonl", ".csv": "csv", ".tsv": "tsv", ".tab": "tsv",
               ".parquet": "parquet"}


class Row(NamedTuple):
    """One data row of a corpus file: its place, and its id and text, or the problem that skips it.

    Attributes:
        file_index: int. The file's index in the input list.
        row_index: int. The 0-based data row within the file.
        where: str. `path:line` (for Parquet, `path:N`, the 1-based row), for messages.
        id: str or None. The id (a JSON or Parquet integer as its decimal text).
        text: str or None. The text; None for a skipped row.
        problem: str or None. One of `PROBLEMS`, or None for a row to embed.
        message: str. What is wrong, starting with `where`; "" for a row to embed.
    """

    file_index: int
    row_index: int
    where: str
    id: str | None
    text: str | None
    problem: str | None = None
    message: str = ""


def file_format_of(path: str, file_format: str | None = None) -> str:
    """The format of a file: `file_format` if given, else from the extension; ValueError for another one."""
    if file_format is not None:
        return file_format
    extension = os.path.splitext(path)[1].lower()
    if extension not in _EXTENSIONS:
        raise ValueError(f"{path}: cannot tell the format from the extension {extension!r}; use one of "
                         f"{sorted(_EXTENSIONS)} or pass --file-format {'|'.join(FILE_FORMATS)}")
    return _EXTENSIONS[extension]


def read_rows(path: str, file_index: int, text_column: str, id_column: str,
              file_format: str | None = None) -> Iterator[Row]:
    """Every data row of one file, in file order, checked (see the module docstring).

    Args:
        path: str. The file; a local path or a URL.
        file_index: int. Its index in the input list (recorded in each row).
        text_column: str. The column (JSON field) of the text.
        id_column: str. The column of the id.
        file_format: str or None. "jsonl", "csv", "tsv" or "parquet"; None: from the extension.

    Returns:
        An iterator of `Row`.

    Raises:
        ValueError: naming the file (and line) of a file that cannot be read as a whole.
        FileNotFoundError: the file is missing.
    """
    file_format = file_format_of(path, file_format)
    if file_format == "jsonl":
        values = _jsonl_values(path, text_column, id_column)
    elif file_format == "parquet":
        values = _parquet_values(path, text_column, id_column)
    else:
        values = _delimited_values(path, file_format, text_column, id_column)
    for row_index, (where, id_value, text) in enumerate(values):
        yield check_row(file_index, row_index, where, id_value, text, text_column, id_column)


def check_row(file_index: int, row_index: int, where: str, id_value: Any, text: Any, text_column: str,
              id_column: str) -> Row:
    """A `Row` from a row's raw id and text values: to embed, or with its problem."""
    def skipped(problem: str, message: str) -> Row:
        return Row(file_index, row_index, where, identifier, None, problem, f"{where}: {message}")

    identifier, why_no_id = _identifier(id_value, id_column)
    if not _utf8(identifier):
        return Row(file_index, row_index, where, None, None, "bad_utf8", f"{where}: {id_column!r} is not valid UTF-8")
    if not _utf8(text):
        return skipped("bad_utf8", f"{text_column!r} is not valid UTF-8")
    if not isinstance(text, str) or not text.strip():
        what = ("absent" if text is None else "blank" if isinstance(text, str)
                else f"{type(text).__name__}, not a string")
        return skipped("empty_text", f"no text: {text_column!r} is {what}")
    if identifier is None:
        return skipped("missing_id", f"no id: {why_no_id}")
    return Row(file_index, row_index, where, identifier, text)


def _identifier(value: Any, column: str) -> tuple[str | None, str]:
    """(the id as text, "") or (None, why there is none)."""
    if value is None:
        return None, f"{column!r} is absent"
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value), ""
    if not isinstance(value, str):
        return None, f"{column!r} is {type(value).__name__}, not a string or an integer"
    if not value.strip():
        return None, f"{column!r} is blank"
    return value, ""


def _utf8(value: Any) -> bool:
    """False for a string holding what UTF-8 cannot encode (undecoded bytes, lone surrogates)."""
    if not isinstance(value, str):
        return True
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _jsonl_values(path: str, text_column: str, id_column: str) -> Iterator[tuple[str, Any, Any]]:
    """(where, id, text) of each non-blank line of a JSON-lines file."""
    for number, raw in enumerate(file_io.iter_lines(path), start=1):
        line = raw.decode("utf-8", "surrogateescape")
        if number == 1:
            line = line.removeprefix("\ufeff")
        if line.strip():
            row = json_object(path, number, line)
            yield f"{path}:{number}", row.get(id_column), row.get(text_column)


def _delimited_values(path: str, file_format: str, text_column: str, id_column: str
                      ) -> Iterator[tuple[str, Any, Any]]:
    """(where, id, text) of each non-blank row of a CSV or TSV file with a header row."""
    text = file_io.read_bytes(path).decode("utf-8", "surrogateescape").removeprefix("\ufeff")
    handle = io.StringIO(text, newline="")
    # TSV (GLUE's layout) is unquoted: a '"' in a sentence is text, not a quote.
    reader = (csv.reader(handle, delimiter="\t", quoting=csv.QUOTE_NONE) if file_format == "tsv"
              else csv.reader(handle))
    header = [name.strip() for name in next(reader, [])]
    for column in (text_column, id_column):
        if column not in header:
            raise ValueError(f"{path}:1: no column {column!r} in the header {header}")
    text_at, id_at = header.index(text_column), header.index(id_column)
    previous_end = reader.line_num
    for row in reader:
        line, previous_end = previous_end + 1, reader.line_num
        if not row or (len(row) == 1 and not row[0].strip()):
            continue
        if len(row) > len(header):
            raise ValueError(f"{path}:{line}: {len(row)} fields but the header has {len(header)}")
        yield (f"{path}:{line}", row[id_at] if id_at < len(row) else None,
               row[text_at] if text_at < len(row) else None)


def _parquet_values(path: str, text_column: str, id_column: str) -> Iterator[tuple[str, Any, Any]]:
    """(where, id, text) of each row of a Parquet file (binary columns are decoded as UTF-8)."""
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError as error:
        raise ValueError(f"{path}: reading Parquet needs pyarrow (pip install pyarrow; it comes with "
                         f"'kbert[beam]'): {error}") from error
    # Read into memory: pyarrow's own file systems do not open TensorFlow's URLs (ram://, and gs:// without gcsfs).
    parquet = pq.ParquetFile(pa.BufferReader(file_io.read_bytes(path)))
    names = parquet.schema_arrow.names
    for column in (text_column, id_column):
        if column not in names:
            raise ValueError(f"{path}: no column {column!r} in the Parquet schema {names}")
    number = 0
    for batch in parquet.iter_batches(columns=[id_column, text_column]):
        for id_value, text in zip(batch.column(0).to_pylist(), batch.column(1).to_pylist()):
            number += 1
            yield f"{path}:{number}", _decoded(id_value), _decoded(text)


def _decoded(value: Any) -> Any:
    return value.decode("utf-8", "surrogateescape") if isinstance(value, bytes) else value
