"""Reading UTF-8 text files line by line under one policy for bad bytes: `strict`, `replace` or `ignore`.

Real corpora are not clean (two of Project Gutenberg's classic files are Latin-1), so every corpus reader
(`kbert vocab`, `kbert create-pretraining-data`, raw-text `kbert pretrain`) decodes through `read_lines`:

- `replace` (the default): each undecodable byte becomes U+FFFD, which BERT's text cleaning then deletes;
  nothing is lost silently, because a warning names the file and how many of its lines were repaired.
- `ignore`: bad bytes are dropped (Google's `create_pretraining_data.py` does this, without a word);
  the same warning is given.
- `strict`: the first bad byte stops the run with its file and line number.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Iterator

import kbert.file_io as file_io

ENCODING_ERRORS = ("strict", "replace", "ignore")
DEFAULT_ENCODING_ERRORS = "replace"


class CorpusEncodingWarning(UserWarning):
    """Some lines of a text file were not valid UTF-8 and were repaired."""


def check_encoding_errors(encoding_errors: str) -> str:
    """Returns `encoding_errors` if it is one of `ENCODING_ERRORS`, else raises a ValueError naming them."""
    if encoding_errors not in ENCODING_ERRORS:
        raise ValueError(f"encoding_errors must be one of {ENCODING_ERRORS}, got {encoding_errors!r}.")
    return encoding_errors


def read_lines(path: str | os.PathLike, encoding_errors: str = DEFAULT_ENCODING_ERRORS) -> Iterator[str]:
    """Yields the lines of a UTF-8 text file, without line endings (`\\n`, `\\r\\n`) or a leading BOM.

    Args:
        path: str | PathLike. The file.
        encoding_errors: str. What to do with bytes that are not UTF-8 (Python's `errors=`): "strict"
            raises, "replace" writes U+FFFD, "ignore" drops them. With "replace" and "ignore" a
            `CorpusEncodingWarning` names the file and the number of repaired lines once it is read.

    Returns:
        An iterator of lines (str).

    Raises:
        ValueError: with "strict", at the first bad line, naming file and line number.

    Example:
        >>> import tempfile
        >>> path = tempfile.mktemp()
        >>> _ = open(path, "wb").write(b"caf\\xe9\\nok\\n")
        >>> with warnings.catch_warnings(record=True):
        ...     list(read_lines(path))
        ['caf\\ufffd', 'ok']
    """
    check_encoding_errors(encoding_errors)
    repaired = 0
    for line_number, raw in enumerate(file_io.iter_lines(path), start=1):
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as error:
            if encoding_errors == "strict":
                raise ValueError(
                    f"{path}:{line_number}: not valid UTF-8 ({error.reason}); use encoding_errors "
                    "'replace' or 'ignore' (--encoding-errors) to repair such lines.") from None
            line = raw.decode("utf-8", errors=encoding_errors)
            repaired += 1
        if line_number == 1:
            line = line.lstrip("\ufeff")
        yield line.rstrip("\r\n")
    if repaired:
        action = "replaced by U+FFFD" if encoding_errors == "replace" else "dropped"
        warnings.warn(
            f"{path}: {repaired} line(s) were not valid UTF-8; their bad bytes were {action} "
            f"(encoding_errors={encoding_errors!r}).", CorpusEncodingWarning, stacklevel=2)
