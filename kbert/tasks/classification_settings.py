"""`ClassificationSettings`: the settings (and `kbert finetune classify` flags) of `ClassificationTask`."""

from __future__ import annotations

import dataclasses
from typing import ClassVar

from kbert.tasks.settings import TaskSettings


@dataclasses.dataclass
class ClassificationSettings(TaskSettings):
    """Which columns hold the text (pair) and the label, and whether labels are scores.

    Args:
        text_column: text column: a name or a 0-based number (files: default "text"; tfds: its own).
        text_pair_column: second text column for sentence pairs.
        label_column: label column, a name or a 0-based number.
        header: CSV / TSV files start with a header row (False: columns are numbers).
        regression: float labels and one output (MSE); None detects it from the labels.

    Example:
    >>> ClassificationSettings(text_column="sentence").label_column
    'label'
    """

    name: ClassVar[str] = "classify"
    command: ClassVar[str | None] = "classify"
    summary: ClassVar[str] = "one text or a text pair -> a class (or a score)"

    text_column: str | int | None = dataclasses.field(
        default=None, metadata={"help": "text column: a name or a 0-based number (files: default 'text'; "
                                        "tfds: its own)"})
    text_pair_column: str | int | None = dataclasses.field(
        default=None, metadata={"help": "second text column for sentence pairs (a name or a number)"})
    label_column: str | int = dataclasses.field(
        default="label", metadata={"help": "label column: a name or a 0-based number"})
    header: bool = dataclasses.field(
        default=True, metadata={"help": "CSV/TSV files start with a header row; --no-header: every line "
                                        "is data and columns are 0-based numbers (GLUE's raw CoLA)"})
    regression: bool | None = dataclasses.field(
        default=None, metadata={"help": "float labels, MSE loss (auto-detected when labels have decimals)"})
