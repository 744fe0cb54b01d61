"""Sentence (pair) classification, and regression as its one-output case (STS-B).

Examples come from CSV / TSV / JSONL files or any tfds text-classification dataset (`read_classification`).
"""

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
from kbert.tasks.readers.local_files import is_text_lines, read_classification_file, read_text_lines
from kbert.tasks.readers.sources import (build_label_vocabulary, parse_source, require_file, source_label_names,
                                         split_of)
from kbert.tasks.readers.tfds_source import as_text, base_name, check_features, class_names, load_tfds
from kbert.tasks.serving import ServingInputs, sentence_functions
from kbert.tasks.soft_targets import soft_target_kl, vector_mse
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

    def distillation_loss(self, teacher_outputs: Any, student_outputs: Any, inputs: dict[str, tf.Tensor],
                          temperature: float) -> tf.Tensor:
        """KL(teacher_T || student_T) * T^2 of the class distributions (`soft_target_kl`)."""
        return soft_target_kl(teacher_outputs, student_outputs, temperature)

    def unlabelled_examples(self, source: str | os.PathLike, limit: int | None = None) -> list[Example]:
        """A `.txt` file holds one text a line; any other source is read as training data is, with the task's
        text columns and without its label column. Placeholder label: the first class (a score of 0)."""
        if is_text_lines(source):
            examples = [{"text": line, "text_pair": None} for line in read_text_lines(source)]
        else:
            examples = read_classification(source, text_column=self.text_column, text_pair_column=self.text_pair_column,
                                           label_column=None, header=self.header)
        placeholder = 0.0 if self.regression else (self.labels or [None])[0]
        return self._unlabelled([{**e, "label": placeholder} for e in examples], source, limit)

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
            return {**self.mediapipe_output(x, logits), "label_id": label_id,
                    "label": tf.gather(label_table, label_id)}

        return sentence_functions(inputs, pair, head)

    mediapipe_task: ClassVar[str | None] = "TextClassifier"

    def mediapipe_output(self, inputs: dict[str, tf.Tensor], outputs: tf.Tensor) -> dict[str, tf.Tensor]:
        """`probabilities` (batch, C): the softmax of the logits, one score per label."""
        return {"probabilities": tf.nn.softmax(outputs, axis=-1)}


@dataclasses.dataclass
class RegressionTask(ClassificationTask):
    """A text (pair) -> a score: `BertClassifier` with one output and MSE (STS-B); no label names."""

    name: ClassVar[str] = "regress"
    command: ClassVar[str | None] = None  # `kbert finetune classify --regression`, or detected
    summary: ClassVar[str] = "one text or a text pair -> a score"

    regression: bool | None = True
    # MediaPipe's TextClassifier names each score's category; a score on a scale has none.
    mediapipe_task: ClassVar[str | None] = None

    def prepare(self, source: str | os.PathLike, examples: Sequence[Example]) -> Task:
        return self

    @property
    def num_outputs(self) -> int:
        return 1

    @classmethod
    def matches(cls, model: keras.Model) -> bool:
        return isinstance(model, BertClassifier) and model.is_regression

    def distillation_loss(self, teacher_outputs: Any, student_outputs: Any, inputs: dict[str, tf.Tensor],
                          temperature: float) -> tf.Tensor:
        """The squared difference of the scores (a score has no distribution to soften: no temperature)."""
        return vector_mse(teacher_outputs, student_outputs)

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


# The text (and text pair) features of the tfds datasets kbert knows; the label feature is "label" for all.
CLASSIFICATION_COLUMNS: dict[str, tuple[str, str | None]] = {
    "glue/cola": ("sentence", None),
    "glue/sst2": ("sentence", None),
    "glue/mrpc": ("sentence1", "sentence2"),
    "glue/qqp": ("question1", "question2"),
    "glue/stsb": ("sentence1", "sentence2"),
    "glue/mnli": ("premise", "hypothesis"),
    "glue/mnli_matched": ("premise", "hypothesis"),
    "glue/mnli_mismatched": ("premise", "hypothesis"),
    "glue/qnli": ("question", "sentence"),
    "glue/rte": ("sentence1", "sentence2"),
    "glue/wnli": ("sentence1", "sentence2"),
    "glue/ax": ("premise", "hypothesis"),
    "imdb_reviews": ("text", None),
    "imdb_reviews/plain_text": ("text", None),
}


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
            None means "text" for files and the dataset's own feature for tfds (`CLASSIFICATION_COLUMNS`,
            e.g. "sentence" for glue/sst2).
        text_pair_column: optional str or int. Second text column; None means none for files and the
            dataset's own (e.g. "hypothesis" for glue/mnli) for tfds.
        label_column: optional str or int. Label column; None reads unlabelled data (label None).
        split: optional str. tfds split when the source string has none ("train" by default).
        labels: optional sequence of str. Allowed labels; anything else is an error.
        regression: bool. Labels are floats (files; tfds float features are read as floats anyway).
        data_dir: optional tfds data directory.
        header: bool. CSV / TSV files: the first line names the columns; False reads it as data, and
            the columns are then numbers (GLUE's raw CoLA: `header=False, text_column=3, label_column=1`).

    Returns:
        list of {"text": str, "text_pair": str | None, "label": str | float | None}: tfds ClassLabel labels
        as their names ("positive"), float labels (STS-B) as floats, label -1 (GLUE test splits) as None.

    Example:
    >>> import tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "dev.jsonl"
    >>> _ = path.write_text('{"premise": "a cat", "hypothesis": "an animal", "label": "entailment"}\\n')
    >>> read_classification(path, text_column="premise", text_pair_column="hypothesis")
    [{'text': 'a cat', 'text_pair': 'an animal', 'label': 'entailment'}]
    """
    parsed = parse_source(source)
    columns = (text_column, text_pair_column, label_column)
    if parsed.kind == "tfds":
        if any(isinstance(c, int) for c in columns):
            raise ValueError(f"tfds {parsed.name}: features have names; give column names, not numbers")
        examples = _read_tfds(parsed.name, split_of(parsed, split), *columns, data_dir=data_dir)
        if labels is not None:
            unknown = sorted({str(e["label"]) for e in examples if e["label"] is not None} - set(labels))
            if unknown:
                raise ValueError(f"tfds {parsed.name}: labels {unknown} are not in {list(labels)}")
        return examples
    require_file(parsed.name)
    if not header and not all(isinstance(c, int) or c is None for c in columns):
        raise ValueError(f"{parsed.name}: a file without a header takes its columns by number "
                         "(e.g. --text-column 3 --label-column 1)")
    if not header and text_column is None:
        raise ValueError(f"{parsed.name}: a file without a header needs the text column's number")
    return read_classification_file(parsed.name, header=header, text_column="text" if text_column is None else
                                    text_column, text_pair_column=text_pair_column, label_column=label_column,
                                    labels=labels, regression=regression)


def _read_tfds(name: str, split: str, text_column: str | None, text_pair_column: str | None,
               label_column: str | None, data_dir: str | None = None) -> list[Example]:
    """A tfds text-classification dataset (every `glue/*` config, `imdb_reviews`, or any other with named
    text features) as `read_classification`'s examples."""
    default_text, default_pair = CLASSIFICATION_COLUMNS.get(base_name(name), (None, None))
    text_column = text_column or default_text
    text_pair_column = text_pair_column or default_pair
    if text_column is None:
        raise ValueError(f"tfds {name}: no default text feature is known; pass text_column=")
    rows, info = load_tfds(name, split, data_dir)
    check_features(name, info.features, (text_column, text_pair_column, label_column))
    names = class_names(info.features[label_column]) if label_column else None
    examples: list[Example] = []
    for row in rows:
        label: str | float | None = None
        if label_column is not None:
            value = row[label_column]
            if names is not None:
                label = names[int(value)] if int(value) >= 0 else None
            elif getattr(value, "dtype", None) is not None and value.dtype.kind == "f":
                label = float(value)
            else:
                label = as_text(value)
        examples.append({"text": as_text(row[text_column]),
                         "text_pair": as_text(row[text_pair_column]) if text_pair_column else None, "label": label})
    return examples
