"""`QuestionAnsweringSettings`: the settings (and `kbert finetune qa` flags) of `QuestionAnsweringTask`."""

from __future__ import annotations

import dataclasses
from typing import ClassVar, Sequence

from kbert.tasks.settings import TaskSettings


@dataclasses.dataclass
class QuestionAnsweringSettings(TaskSettings):
    """How contexts are cut into windows and answers are searched.

    Args:
        doc_stride: tokens between window starts.
        max_query_length: questions are cut to this many tokens.
        max_answer_length: longest answer in tokens, in evaluation and serving.
        null_score_diff_threshold: SQuAD 2.0: answer "" when the no-answer score beats the best span
            by more than this.
        strict_answers: stop at the first answer whose answer_start does not point at its text; by
            default such answers are skipped with a warning that counts and names them.
        train_articles: optional (start, stop). Read only these articles of a SQuAD JSON file for
            training (`data["data"][start:stop]`), e.g. (0, 40); None: every article.
        validation_articles: optional (start, stop). The same for the validation (and evaluation) file.

    Example:
    >>> QuestionAnsweringSettings(doc_stride=64).doc_stride
    64
    """

    name: ClassVar[str] = "qa"
    command: ClassVar[str | None] = "qa"
    summary: ClassVar[str] = "extractive question answering (SQuAD JSON or tfds:squad/...)"

    doc_stride: int = dataclasses.field(default=128, metadata={"help": "tokens between window starts"})
    max_query_length: int = dataclasses.field(default=64, metadata={"help": "questions are cut to this many tokens"})
    max_answer_length: int = dataclasses.field(default=30, metadata={"help": "longest answer in tokens"})
    null_score_diff_threshold: float = dataclasses.field(default=0.0, metadata={"cli": False})
    strict_answers: bool = dataclasses.field(default=False, metadata={
        "help": "stop at the first answer whose answer_start does not point at its text (default: skip "
                "such answers with a warning)"})
    train_articles: Sequence[int] | None = dataclasses.field(default=None, metadata={
        "help": "START:STOP articles of a SQuAD JSON train file (default: all)"})
    validation_articles: Sequence[int] | None = dataclasses.field(default=None, metadata={
        "help": "START:STOP articles of the SQuAD JSON validation file (default: all)"})
