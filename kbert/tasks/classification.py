"""Sentence (pair) classification, and regression as its one-output case (STS-B)."""

from __future__ import annotations

import dataclasses
import os
from typing import Any, Callable, ClassVar, Sequence

import keras
import numpy as np
import tensorflow as tf

from kbert.metrics import classification_metrics, regression_metrics
from kbert.tasks.classification_model import BertClassifier
from kbert.tasks.base import Example, Task, TaskData
from kbert.tasks.classification_data import classification_dataset, encode_labels
from kbert.tasks.classification_settings import ClassificationSettings
from kbert.tasks.readers.sources import build_label_vocabulary, read_classification, source_label_names
from kbert.tasks.serving import ServingInputs, sentence_functions
from kbert.text import BertPreprocessor


@dataclasses.dataclass
class ClassificationTask(ClassificationSettings, Task):
    """One text or a text pair -> a class; `BertClassifier` on the pooled `[CLS]` vector.

    Args:
        The fields of `ClassificationSettings` (its flags and `task.json` entries); and
        labels: the class names in id order (set by `prepare` from the training data).

    Example:
    >>> task = ClassificationTask(text_column="sentence")
    >>> task.info()["task"]
    'classify'
    """

    model_class: ClassVar[type] = BertClassifier

    def _read(self, source: str | os.PathLike, split: str) -> list[Example]:
        return read_classification(source, text_column=self.text_column, text_pair_column=self.text_pair_column,
                                   label_column=self.label_column, regression=self.regression is True,
                                   header=self.header)

    def prepare(self, source: str | os.PathLike, examples: Sequence[Example]) -> Task:
        """A `RegressionTask` for float labels, else this task with the label vocabulary of `examples`."""
        if self.regression or (self.regression is None and looks_like_regression(examples)):
            return RegressionTask(**{**dataclasses.asdict(self), "labels": None, "regression": True})
        column = self.label_column if isinstance(self.label_column, str) else "label"
        labels = source_label_names(source, column) or build_label_vocabulary(e["label"] for e in examples)
        return dataclasses.replace(self, labels=labels, regression=False)

    def check_labels(self, examples: Sequence[Example]) -> None:
        encode_labels(examples, self.labels, regression=self.regression is True)

    def dataset(self, examples: Sequence[Example], preprocessor: BertPreprocessor, batch_size: int,
                training: bool, seed: int = 0, group_by_length: bool = True,
                drop_remainder: bool = False) -> TaskData:
        data = classification_dataset(examples, preprocessor, self.labels, regression=self.regression is True,
                                      batch_size=batch_size, shuffle=training, seed=seed, with_labels=training,
                                      group_by_length=group_by_length, drop_remainder=drop_remainder)
        return TaskData(data, len(examples))

    def build_model(self, encoder: keras.Model, dropout: float = 0.1, feature_based: bool = False) -> keras.Model:
        return BertClassifier(encoder, self.num_outputs, dropout=dropout, feature_based=feature_based)

    @property
    def num_outputs(self) -> int:
        return len(self.labels or ())

    @classmethod
    def matches(cls, model: keras.Model) -> bool:
        return isinstance(model, BertClassifier) and not model.is_regression

    def check_model(self, model: keras.Model) -> None:
        if model.num_classes != self.num_outputs:
            raise ValueError(f"A {self.name} model with {model.num_classes} outputs needs {model.num_classes} "
                             f"label names, got {self.labels}")

    def score(self, examples: Sequence[Example], batches: list[tuple[Any, dict[str, Any]]],
              extra: Any) -> dict[str, Any]:
        predicted = np.concatenate([outputs for outputs, _ in batches])
        index_of = {name: i for i, name in enumerate(self.labels or ())}
        gold = [index_of.get(str(e["label"]), -1) for e in examples]
        guess = np.argmax(predicted, -1).tolist()
        positive = 1 if len(index_of) == 2 else max(set(gold) | set(guess))
        return classification_metrics(gold, guess, positive_label=positive)

    @property
    def takes_pair(self) -> bool:
        return self.text_pair_column is not None

    def serving_functions(self, inputs: ServingInputs, pair: bool = False) -> dict[str, Callable]:
        """classify(text[, text_pair]) -> probabilities (batch, C), label_id (batch,), label (batch,) str."""
        if not self.labels:
            raise ValueError(f"a {self.name} export needs the label names")
        label_table = tf.constant(self.labels)

        def head(x: dict[str, tf.Tensor], logits: tf.Tensor) -> dict[str, tf.Tensor]:
            label_id = tf.argmax(logits, axis=-1, output_type=tf.int32)
            return {"probabilities": tf.nn.softmax(logits, axis=-1), "label_id": label_id,
                    "label": tf.gather(label_table, label_id)}

        return sentence_functions(inputs, pair, head)


@dataclasses.dataclass
class RegressionTask(ClassificationTask):
    """A text (pair) -> a score: `BertClassifier` with one output and MSE (STS-B); no label names."""

    name: ClassVar[str] = "regress"
    command: ClassVar[str | None] = None  # `kbert finetune classify --regression`, or detected
    summary: ClassVar[str] = "one text or a text pair -> a score"

    regression: bool | None = True

    def prepare(self, source: str | os.PathLike, examples: Sequence[Example]) -> Task:
        return self

    @property
    def num_outputs(self) -> int:
        return 1

    @classmethod
    def matches(cls, model: keras.Model) -> bool:
        return isinstance(model, BertClassifier) and model.is_regression

    def check_model(self, model: keras.Model) -> None:
        """Any one-output classifier is a regression model."""

    def score(self, examples: Sequence[Example], batches: list[tuple[Any, dict[str, Any]]],
              extra: Any) -> dict[str, Any]:
        predicted = np.concatenate([outputs for outputs, _ in batches])
        return regression_metrics([float(e["label"]) for e in examples], predicted[:, 0].tolist())

    def serving_functions(self, inputs: ServingInputs, pair: bool = False) -> dict[str, Callable]:
        """regress(text[, text_pair]) -> score (batch,)."""
        return sentence_functions(inputs, pair, lambda x, y: {"score": y[:, 0]})


def looks_like_regression(examples: Sequence[Example]) -> bool:
    """True when every label is a number and some are not integers (e.g. STS-B's 3.8)."""
    labels = [e["label"] for e in examples if e.get("label") is not None]
    try:
        values = [float(label) for label in labels]
    except (TypeError, ValueError):
        return False
    if labels and all(isinstance(label, float) for label in labels):
        return True
    return bool(values) and any(not v.is_integer() for v in values)
