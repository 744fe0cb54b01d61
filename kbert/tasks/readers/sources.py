"""Where a task's raw examples come from: a local file path or `tfds:NAME[:SPLIT]`.

Each task reads its own examples (`ClassificationTask`, `TaggingTask`, `QuestionAnsweringTask` and their
module-level `read_*` functions); what they share is here: telling a file from a tfds source
(`parse_source`), and label vocabularies, built from training labels (`build_label_vocabulary`) or taken
from a tfds ClassLabel (`source_label_names`). A model directory keeps them in its `task.json`.
"""

from __future__ import annotations

import dataclasses
import math
import os
import re
from typing import Iterable

import kbert.file_io as file_io
from kbert.tasks.readers.tfds_source import tfds_label_names

_VERSION = re.compile(r"^\d+\.\d+\.\d+$")


@dataclasses.dataclass(frozen=True)
class DataSource:
    """Where examples come from: a tfds dataset or a local file.

    Args:
        kind: str. "tfds" or "file".
        name: str. tfds name (with optional ":VERSION") or the file path.
        split: str or None. The tfds split given in the source string, if any.
    """

    kind: str
    name: str
    split: str | None = None


def parse_source(source: str | os.PathLike) -> DataSource:
    """Parses `tfds:NAME[:VERSION][:SPLIT]` or a file path.

    Args:
        source: str or PathLike. E.g. "tfds:glue/mnli:validation_matched", "tfds:glue/sst2:2.0.0:train[:10%]",
            "data/train.tsv".

    Returns:
        DataSource.

    Example:
    >>> parse_source("tfds:glue/sst2:validation")
    DataSource(kind='tfds', name='glue/sst2', split='validation')
    """
    text = os.fspath(source)
    if not text.startswith("tfds:"):
        return DataSource("file", text)
    rest = text[len("tfds:") :]
    name, _, split = rest.partition(":")
    version, _, after_version = split.partition(":")
    if _VERSION.match(version):
        name, split = f"{name}:{version}", after_version
    if not name:
        raise ValueError(f"{text!r}: expected tfds:NAME[:SPLIT], e.g. tfds:glue/sst2:validation")
    return DataSource("tfds", name, split or None)


def split_of(source: DataSource, split: str | None) -> str:
    """The tfds split to read: the one the source names, else `split`, else "train" (both: they must agree)."""
    if source.split and split and source.split != split:
        raise ValueError(f"the source names split {source.split!r} but split={split!r} was passed")
    return source.split or split or "train"


def require_file(path: str) -> None:
    """FileNotFoundError unless `path` is a file, with the hint for tfds sources."""
    if not file_io.isfile(path):
        raise FileNotFoundError(f"{path}: no such file (for a tfds dataset write tfds:NAME[:SPLIT])")


def source_label_names(source: str | os.PathLike, column: str = "label") -> list[str] | None:
    """The label names in a tfds source's own id order (None for files and non-ClassLabel features).

    Example:
    >>> source_label_names("train.tsv") is None
    True
    """
    parsed = parse_source(source)
    if parsed.kind != "tfds":
        return None
    column = "chunks" if column == "chunk" else column
    return tfds_label_names(parsed.name, column)


def _number(label: str) -> float | None:
    try:
        value = float(label)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def build_label_vocabulary(labels: Iterable[str | None]) -> list[str]:
    """The sorted, de-duplicated label names seen in training data.

    Numeric-looking labels sort by value ("2" before "10"), others as strings, so the same data always
    gives the same ids. None (unlabelled) is skipped.

    Args:
        labels: iterable of str. One label per example (or per token for tagging).

    Returns:
        list of str; a label's index is its class id.

    Example:
    >>> build_label_vocabulary(["10", "2", "2", "0"])
    ['0', '2', '10']
    """
    unique = {str(label) for label in labels if label is not None}
    if not unique:
        raise ValueError("no labels to build a vocabulary from")
    numbers = {label: _number(label) for label in unique}
    if all(value is not None for value in numbers.values()):
        return sorted(unique, key=lambda label: (numbers[label], label))
    return sorted(unique)
