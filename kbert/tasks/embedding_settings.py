"""`EmbeddingSettings`: the settings (and `kbert finetune embed` flags) of `EmbeddingTask`."""

from __future__ import annotations

import dataclasses
from typing import ClassVar

from kbert.constants import POOLING_MODES
from kbert.tasks.settings import TaskSettings


@dataclasses.dataclass
class EmbeddingSettings(TaskSettings):
    """Which columns hold a text, its positive (and a hard negative or a score), how a sentence is pooled,
    and the in-batch-negatives loss.

    Args:
        text_column: the first text (the anchor, or query): a name or a 0-based number (files: default
            "text"; tfds: the dataset's own first text).
        text_pair_column: its positive, the text it should be near (files: default "text_pair"; tfds: the
            dataset's own second text).
        negative_column: optional hard negative of each row, a text it should be far from.
        label_column: optional gold similarity score of each pair (e.g. STS-B's 0-5), read for evaluation
            only: with it, evaluation reports the Spearman and Pearson correlation of the cosine similarities
            with the scores; without, retrieval over the pairs. Training reads no score.
        header: CSV / TSV files start with a header row (False: columns are numbers).
        pooling: one of `kbert.constants.POOLING_MODES`: how the token vectors become one vector.
        normalize: L2-normalise the embedding (cosine similarity is then a dot product).
        scale: the loss multiplies the cosine similarities by this (an inverse temperature).
        symmetric: the loss also ranks each positive's anchor among all anchors, and averages the two.
        prompts: optional dict of prompt name -> the text prepended to each text before tokenizing
            (sentence-transformers' `prompts`, e.g. {"query": "query: ", "passage": "passage: "}); read from a
            sentence-transformers directory, not a flag.
        default_prompt_name: optional name of the prompt applied when none is named (not a flag).

    Example:
    >>> EmbeddingSettings(text_column="anchor", text_pair_column="positive").pooling
    'mean'
    """

    name: ClassVar[str] = "embed"
    command: ClassVar[str | None] = "embed"
    summary: ClassVar[str] = "text pairs -> sentence embeddings (in-batch negatives)"

    text_column: str | int | None = dataclasses.field(
        default=None, metadata={"help": "first text (anchor/query): a name or a 0-based number (files: default "
                                        "'text'; tfds: its own)"})
    text_pair_column: str | int | None = dataclasses.field(
        default=None, metadata={"help": "its positive, a name or a number (files: default 'text_pair'; tfds: its "
                                        "own second text)"})
    negative_column: str | int | None = dataclasses.field(
        default=None, metadata={"help": "optional hard negative of each row (a name or a number)"})
    label_column: str | int | None = dataclasses.field(
        default=None, metadata={"help": "optional gold similarity score per pair, for evaluation only: Spearman/"
                                        "Pearson of the cosine similarities (without it: retrieval over the pairs)"})
    header: bool = dataclasses.field(
        default=True, metadata={"help": "CSV/TSV files start with a header row; --no-header: columns are 0-based "
                                        "numbers"})
    pooling: str = dataclasses.field(
        default="mean", metadata={"help": "how token vectors become the sentence vector", "choices": POOLING_MODES})
    normalize: bool = dataclasses.field(
        default=True, metadata={"help": "L2-normalise the embedding (default: on)"})
    scale: float = dataclasses.field(
        default=20.0, metadata={"help": "cosine similarities are multiplied by this in the loss"})
    symmetric: bool = dataclasses.field(
        default=False, metadata={"help": "the loss also ranks each positive's anchor among all anchors (default: "
                                         "off)"})
    prompts: dict[str, str] | None = dataclasses.field(default=None, metadata={"cli": False})
    default_prompt_name: str | None = dataclasses.field(default=None, metadata={"cli": False})
