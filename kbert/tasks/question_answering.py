"""Extractive question answering (SQuAD v1.1 / v2.0): the answer is a span of the context."""

from __future__ import annotations

import dataclasses
import os
from typing import Any, Callable, ClassVar, Sequence

import keras
import numpy as np
import tensorflow as tf

from kbert.metrics import squad_evaluate
from kbert.tasks.question_answering_model import OUTPUTS as QA_OUTPUTS, BertQuestionAnswerer
from kbert.tasks.base import Example, Task, TaskData
from kbert.tasks.qa_features import build_qa_features
from kbert.tasks.question_answering_settings import QuestionAnsweringSettings
from kbert.tasks.readers.sources import parse_source, require_file, split_of
from kbert.tasks.readers.squad_json import keep_matching_answers, read_squad_json
from kbert.tasks.readers.tfds_source import LengthCheck, as_text, load_tfds
from kbert.tasks.serving import STRING, ServingInputs, substrings
from kbert.tasks.soft_targets import soft_target_kl
from kbert.tasks.span_decoding import answer_positions, best_spans, decode_answers
from kbert.text import BertPreprocessor


@dataclasses.dataclass
class QuestionAnsweringTask(QuestionAnsweringSettings, Task):
    """A question and a context -> the answer span; `BertQuestionAnswerer` scores starts and ends.

    Long contexts are cut into windows `doc_stride` tokens apart; the answer is the best span over the
    windows (`kbert.tasks.span_decoding`), the same search the serving graph runs on its one window.

    Args:
        The fields of `QuestionAnsweringSettings` (its flags and `task.json` entries).

    Example:
    >>> QuestionAnsweringTask(doc_stride=64).info()["doc_stride"]
    64
    """

    model_class: ClassVar[type] = BertQuestionAnswerer
    serving_uses_offsets: ClassVar[bool] = True  # the answer's span in the context

    def _read(self, source: str | os.PathLike, split: str) -> list[Example]:
        articles = self.train_articles if split == "train" else self.validation_articles
        return read_squad(source, article_range=articles, strict_answers=self.strict_answers)

    def dataset(self, examples: Sequence[Example], preprocessor: BertPreprocessor, batch_size: int,
                training: bool, seed: int = 0, group_by_length: bool = True,
                drop_remainder: bool = False) -> TaskData:
        features = build_qa_features(examples, preprocessor.tokenizer, preprocessor.sequence_length,
                                     self.doc_stride, self.max_query_length)
        data = features.dataset(batch_size, with_labels=training, shuffle=training, seed=seed,
                                group_by_length=group_by_length,
                                dynamic_padding=preprocessor.padding == "dynamic", drop_remainder=drop_remainder)
        return TaskData(data, len(features), features)

    def distillation_loss(self, teacher_outputs: Any, student_outputs: Any, inputs: dict[str, tf.Tensor],
                          temperature: float) -> tf.Tensor:
        """The mean of KL(teacher_T || student_T) * T^2 of the start distribution and of the end distribution
        over each window's positions (padding holds -1e4 in both models' logits: no probability, no term)."""
        return tf.add_n([soft_target_kl(teacher_outputs[name], student_outputs[name], temperature)
                         for name in QA_OUTPUTS]) / len(QA_OUTPUTS)

    def unlabelled_examples(self, source: str | os.PathLike, limit: int | None = None) -> list[Example]:
        """Questions and contexts read as training data is (SQuAD JSON or tfds), their answers not read.
        Placeholder: no answer (start and end at [CLS])."""
        examples = read_squad(source, validate_answers=False)
        return self._unlabelled([{**e, "answers": [], "is_impossible": True} for e in examples], source, limit)

    def build_model(self, encoder: keras.Model, dropout: float = 0.1, feature_based: bool = False) -> keras.Model:
        return BertQuestionAnswerer(encoder, dropout=dropout, feature_based=feature_based)

    def score(self, examples: Sequence[Example], batches: list[tuple[Any, dict[str, Any]]],
              extra: Any) -> dict[str, Any]:
        # Each batch was cut to its longest window: pad the logits back to the windows' full length
        # (decoding never picks a position off the context).
        def full_width(logits):
            return np.pad(logits, [(0, 0), (0, extra.sequence_length - logits.shape[1])])

        start = np.concatenate([full_width(outputs["start_logits"]) for outputs, _ in batches])
        end = np.concatenate([full_width(outputs["end_logits"]) for outputs, _ in batches])
        answers = decode_answers(examples, extra, start, end, max_answer_length=self.max_answer_length,
                                 version_2_with_negative=any(e.get("is_impossible") for e in examples),
                                 null_score_diff_threshold=self.null_score_diff_threshold)
        return squad_evaluate(examples, answers)

    example_requests: ClassVar[dict[str, tuple[str, ...]]] = {
        **Task.example_requests, "question": ("what is warmed up?",),
        "context": ("the server is warmed up by these requests.",)}

    def serving_inputs(self, pair: bool = False) -> dict[str, tuple[str, ...]]:
        """`preprocess` and `serving_default` take a question and its context, in that order."""
        return {"preprocess": ("question", "context"), "serving_default": ("question", "context")}

    def serving_functions(self, inputs: ServingInputs, pair: bool = False) -> dict[str, Callable]:
        """qa(question, context) -> start_char, end_char, score, no_answer_score (+ answer)."""

        @tf.function(input_signature=[STRING, STRING])
        def answer(question, context):
            # The question cut to max_query_length pieces, as evaluation's windows cut it.
            x = inputs.pack_with_offsets(question, context, max_first_length=self.max_query_length)
            y = inputs.run_model(x)
            allowed = answer_positions(tf.equal(x["text_index"], 1) & tf.cast(x["padding_mask"], tf.bool),
                                       x["start_offsets"], x["end_offsets"])
            span = best_spans(y["start_logits"], y["end_logits"], allowed, self.max_answer_length)
            found = span["start_token"] >= 0
            start_char = tf.where(found, tf.gather(x["start_offsets"], tf.maximum(span["start_token"], 0),
                                                   batch_dims=1), -1)
            end_char = tf.where(found, tf.gather(x["end_offsets"], tf.maximum(span["end_token"], 0),
                                                 batch_dims=1), -1)
            out = {"start_char": start_char, "end_char": end_char, "score": span["score"],
                   "no_answer_score": span["null_score"]}
            if inputs.with_strings:
                out["answer"] = substrings(context, start_char[:, tf.newaxis], end_char[:, tf.newaxis])[:, 0]
            return out

        preprocess = tf.function(
            lambda question, context: inputs.pack(question, context, max_first_length=self.max_query_length),
            input_signature=[STRING] * 2)
        return {"preprocess": preprocess, "serving_default": answer}


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
        on_length_mismatch: str. tfds only: "truncate", "skip" or "raise" when answers/text and
            answers/answer_start differ in length (only mock data does; `kbert.tasks.readers.tfds_source`).
        data_dir: optional tfds data directory.

    Returns:
        list of {"id", "question", "context", "answers": [{"text", "answer_start"}], "is_impossible"};
        SQuAD v2.0 questions marked is_impossible have no answers.

    Example:
    >>> read_squad("../shared/data/squad_v1.1/dev-v1.1.json", article_range=(40, 48))  # doctest: +SKIP
    """
    parsed = parse_source(source)
    if parsed.kind == "tfds":
        if article_range is not None:
            raise ValueError("article_range applies to SQuAD JSON files, not tfds sources")
        split = split_of(parsed, split)
        examples = _read_tfds(parsed.name, split, on_length_mismatch, data_dir)
        if validate_answers:
            examples = keep_matching_answers(examples, f"tfds {parsed.name}[{split}]", strict_answers)
        return examples
    require_file(parsed.name)
    return read_squad_json(parsed.name, article_range=article_range, validate_answers=validate_answers,
                           strict_answers=strict_answers)


def _read_tfds(name: str, split: str, on_length_mismatch: str, data_dir: str | None = None) -> list[Example]:
    """tfds `squad/v1.1` or `squad/v2.0` as `read_squad`'s examples (answers not yet checked)."""
    check = LengthCheck(on_length_mismatch, "answers/text and answers/answer_start")
    rows, _ = load_tfds(name, split, data_dir)
    examples: list[Example] = []
    for row in rows:
        qid = as_text(row["id"])
        impossible = bool(row.get("is_impossible", False))
        texts = [as_text(t) for t in row["answers"]["text"]]
        starts = [int(s) for s in row["answers"]["answer_start"]]
        answers = []
        if not impossible:  # v2.0 impossible questions keep no answers, whatever the features hold
            keep = check((len(texts), len(starts)), f"tfds {name}[{split}] question {qid!r}")
            if keep is None:
                continue
            answers = [{"text": t, "answer_start": s} for t, s in zip(texts[:keep], starts[:keep])]
        examples.append({"id": qid, "question": as_text(row["question"]), "context": as_text(row["context"]),
                         "answers": answers, "is_impossible": impossible})
    check.report(name)
    return examples
