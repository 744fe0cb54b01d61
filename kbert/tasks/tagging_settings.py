"""`TaggingSettings`: the settings (and `kbert finetune tag` flags) of `TaggingTask`."""

from __future__ import annotations

import dataclasses
from typing import ClassVar

from kbert.tasks.settings import TaskSettings


@dataclasses.dataclass
class TaggingSettings(TaskSettings):
    """Which column holds the tags, and how the file is laid out.

    Args:
        tag_column: CoNLL column ("ner", "pos", "chunk" or a 0-based number) or tfds feature.
        tag_format: "conll" (token-per-line columns) or "spaces" (a TSV row per sentence: tokens, then
            tags, each separated by spaces, as MSRA NER ships); None detects it from the file.

    Example:
    >>> TaggingSettings(tag_column="pos").tag_column
    'pos'
    """

    name: ClassVar[str] = "tag"
    command: ClassVar[str | None] = "tag"
    summary: ClassVar[str] = "a label per word (NER, POS) from CoNLL files, tokens/tags TSVs or tfds:conll2003"

    tag_column: str | int = dataclasses.field(default="ner", metadata={"help": "ner, pos, chunk or a column index"})
    tag_format: str | None = dataclasses.field(default=None, metadata={
        "help": "conll (a token per line, tags in a column) or spaces (a TSV row per sentence: tokens, tab, "
                "tags, each separated by spaces); default: detected from the file"})
