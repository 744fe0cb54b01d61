"""One front door per task for raw examples: a local file path or `tfds:NAME[:SPLIT]`.

`read_classification`, `read_tagging` and `read_squad` return plain lists of example dicts; tokenization
and windowing happen later, in the tasks' tf.data pipelines. Label vocabularies are built from training
labels (`build_label_vocabulary`) or taken from a tfds ClassLabel (`source_label_names`); a model directory
keeps them in its `task.json`.
"""

from __future__ import annotations

import dataclasses
import math
import os
import re
from typing import Iterable, Sequence

import kbert.file_io as file_io
from kbert.tasks.example import Example
from kbert.tasks.readers.conll import iob1_to_iob2, read_conll
from kbert.tasks.readers.local_files import read_classification_file
from kbert.tasks.readers.space_separated import TAG_FORMATS, detect_tag_format, read_space_separated_tags
from kbert.tasks.readers.squad_json import read_squad_json
from kbert.tasks.readers.tfds_tasks import (
    read_tfds_classification,
    read_tfds_squad,
    read_tfds_tagging,
    tfds_label_names,
)

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


def _split(source: DataSource, split: str | None) -> str:
    if source.split and split and source.split != split:
        raise ValueError(f"the source names split {source.split!r} but split={split!r} was passed")
    return source.split or split or "train"


def _require_file(path: str) -> None:
    if not file_io.isfile(path):
        raise FileNotFoundError(f"{path}: no such file (for a tfds dataset write tfds:NAME[:SPLIT])")


def read_classification(
    source: str | os.PathLike,
    *,
    text_column: str | int | None = None,
    text_pair_column: str | int | None = None,
    label_column: str | int | None = "label",
    split: str | None = None,
    labels: Sequence[str] | None = None,
    regression: bool = False,
    data_dir: str | None = None,
    header: bool = True,
) -> list[Example]:
    """Reads single-text or text-pair classification / regression examples.

    Args:
        source: str or PathLike. A .csv / .tsv / .jsonl file or `tfds:NAME[:SPLIT]`.
        text_column: optional str or int. Text column (a name, or a 0-based number in a CSV / TSV file);
            None means "text" for files and the dataset's own feature for tfds (e.g. "sentence" for
            glue/sst2).
        text_pair_column: optional str or int. Second text column; None means none for files and the
            dataset's own (e.g. "hypothesis" for glue/mnli) for tfds.
        label_column: optional str or int. Label column; None reads unlabelled data (label None).
        split: optional str. tfds split when the source string has none ("train" by default).
        labels: optional sequence of str. Allowed labels; anything else is an error (files only; tfds
            labels come from the dataset's ClassLabel).
        regression: bool. Labels are floats (files; tfds float features are read as floats anyway).
        data_dir: optional tfds data directory.
        header: bool. CSV / TSV files: the first line names the columns; False reads it as data, and
            the columns are then numbers (GLUE's raw CoLA: `header=False, text_column=3, label_column=1`).

    Returns:
        list of {"text": str, "text_pair": str | None, "label": str | float | None}.

    Example:
    >>> import tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "dev.jsonl"
    >>> _ = path.write_text('{"premise": "a cat", "hypothesis": "an animal", "label": "entailment"}\\n')
    >>> read_classification(path, text_column="premise", text_pair_column="hypothesis")
    [{'text': 'a cat', 'text_pair': 'an animal', 'label': 'entailment'}]
    """
    parsed = parse_source(source)
    if parsed.kind == "tfds":
        if any(isinstance(c, int) for c in (text_column, text_pair_column, label_column)):
            raise ValueError(f"tfds {parsed.name}: features have names; give column names, not numbers")
        examples = read_tfds_classification(parsed.name, _split(parsed, split), text_column=text_column,
                                            text_pair_column=text_pair_column, label_column=label_column,
                                            data_dir=data_dir)
        if labels is not None:
            unknown = sorted({str(e["label"]) for e in examples if e["label"] is not None} - set(labels))
            if unknown:
                raise ValueError(f"tfds {parsed.name}: labels {unknown} are not in {list(labels)}")
        return examples
    _require_file(parsed.name)
    if not header and not all(isinstance(c, int) or c is None for c in (text_column, text_pair_column,
                                                                        label_column)):
        raise ValueError(f"{parsed.name}: a file without a header takes its columns by number "
                         "(e.g. --text-column 3 --label-column 1)")
    if not header and text_column is None:
        raise ValueError(f"{parsed.name}: a file without a header needs the text column's number")
    return read_classification_file(
        parsed.name,
        header=header,
        text_column="text" if text_column is None else text_column,
        text_pair_column=text_pair_column,
        label_column=label_column,
        labels=labels,
        regression=regression,
    )


def read_tagging(
    source: str | os.PathLike,
    *,
    tag_column: str | int = "ner",
    tag_format: str | None = None,
    split: str | None = None,
    to_iob2: bool = False,
    on_length_mismatch: str = "truncate",
    data_dir: str | None = None,
) -> list[Example]:
    """Reads token-tagging sentences from a CoNLL column file, a `tokens<TAB>tags` TSV (MSRA NER as Chinese
    BERT toolkits ship it) or `tfds:conll2003[:SPLIT]`.

    Args:
        source: str or PathLike. The file or tfds source.
        tag_column: str or int. CoNLL and tfds: "ner" (last column / tfds "ner"), "pos" (column 1), "chunk",
            or an index.
        tag_format: optional str. Files: "conll" (`read_conll`) or "spaces" (`read_space_separated_tags`);
            None detects it (`detect_tag_format`).
        split: optional str. tfds split when the source string has none.
        to_iob2: bool. Rewrite IOB1 entity tags as IOB2 (IOB2 input is left unchanged).
        on_length_mismatch: str. tfds only: "truncate", "skip" or "raise" (see `read_tfds_tagging`).
        data_dir: optional tfds data directory.

    Returns:
        list of {"words": list[str], "tags": list[str]}.

    Example:
    >>> import tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "train.txt"
    >>> _ = path.write_text("Paris NNP I-LOC\\nis VBZ O\\n")
    >>> read_tagging(path, to_iob2=True)
    [{'words': ['Paris', 'is'], 'tags': ['B-LOC', 'O']}]
    """
    if tag_format is not None and tag_format not in TAG_FORMATS:
        raise ValueError(f"tag_format must be one of {list(TAG_FORMATS)} or None (detect), got {tag_format!r}")
    parsed = parse_source(source)
    if parsed.kind == "tfds":
        if tag_format == "spaces":
            raise ValueError(f"tfds {parsed.name}: tag_format 'spaces' applies to TSV files")
        examples = read_tfds_tagging(parsed.name, _split(parsed, split), tag_column=tag_column,
                                     on_length_mismatch=on_length_mismatch, data_dir=data_dir)
    else:
        _require_file(parsed.name)
        if (tag_format or detect_tag_format(parsed.name)) == "spaces":
            examples = read_space_separated_tags(parsed.name)
        else:
            examples = read_conll(parsed.name, tag_column=tag_column)
    if to_iob2:
        examples = [{"words": e["words"], "tags": iob1_to_iob2(e["tags"])} for e in examples]
    return examples


def read_squad(
    source: str | os.PathLike,
    *,
    split: str | None = None,
    article_range: Sequence[int] | range | None = None,
    validate_answers: bool = True,
    strict_answers: bool = False,
    on_length_mismatch: str = "truncate",
    data_dir: str | None = None,
) -> list[Example]:
    """Reads extractive-QA examples from SQuAD JSON or `tfds:squad/v1.1|v2.0[:SPLIT]`.

    Args:
        source: str or PathLike. The JSON file or tfds source.
        split: optional str. tfds split when the source string has none.
        article_range: optional (start, stop) or range. JSON files only: keep these articles, e.g. (0, 40).
        validate_answers: bool. Check that each answer_start points at its answer text; answers that do
            not are skipped with a warning that counts and names them.
        strict_answers: bool. Raise ValueError at the first such answer instead.
        on_length_mismatch: str. tfds only (see `read_tfds_squad`).
        data_dir: optional tfds data directory.

    Returns:
        list of {"id", "question", "context", "answers": [{"text", "answer_start"}], "is_impossible"}.

    Example:
    >>> read_squad("../shared/data/squad_v1.1/dev-v1.1.json", article_range=(40, 48))  # doctest: +SKIP
    """
    parsed = parse_source(source)
    if parsed.kind == "tfds":
        if article_range is not None:
            raise ValueError("article_range applies to SQuAD JSON files, not tfds sources")
        return read_tfds_squad(parsed.name, _split(parsed, split), validate_answers=validate_answers,
                               strict_answers=strict_answers, on_length_mismatch=on_length_mismatch,
                               data_dir=data_dir)
    _require_file(parsed.name)
    return read_squad_json(parsed.name, article_range=article_range, validate_answers=validate_answers,
                           strict_answers=strict_answers)


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
