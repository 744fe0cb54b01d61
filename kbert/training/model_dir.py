"""A fine-tuned model directory: the Keras model, its tokenizer, its labels and how inputs are packed.

    DIR/model.keras             the task model (kbert.BertClassifier, ...), Keras' own format
    DIR/vocab.txt               the tokenizer's vocabulary
    DIR/tokenizer_config.json   casing ({"do_lower_case": ...})
    DIR/task.json               {"task", "labels", "sequence_length", "truncate", ...}
    DIR/metrics.json            validation metrics (written by `kbert finetune`)

`kbert.load_model(DIR)` restores all of it; `kbert export DIR` reads it.
"""

from __future__ import annotations

import json
import os
import pathlib
from typing import Any

import keras

import kbert.models.bert_classifier  # noqa: F401  (registers the task classes for deserialization)
import kbert.models.bert_question_answerer  # noqa: F401
import kbert.models.bert_token_classifier  # noqa: F401
from kbert.models.bert_classifier import BertClassifier
from kbert.models.bert_question_answerer import BertQuestionAnswerer
from kbert.models.bert_token_classifier import BertTokenClassifier
from kbert.text import BertPreprocessor, BertTokenizer, load_tokenizer

TASKS = ("classify", "regress", "tag", "qa")


def task_of(model: keras.Model) -> str:
    if isinstance(model, BertClassifier):
        return "regress" if model.is_regression else "classify"
    if isinstance(model, BertTokenClassifier):
        return "tag"
    if isinstance(model, BertQuestionAnswerer):
        return "qa"
    raise TypeError(f"Not a kbert task model: {type(model).__name__}")


def save_model(
    model: keras.Model,
    directory: str | os.PathLike,
    tokenizer: BertTokenizer,
    labels: list[str] | None = None,
    sequence_length: int = 128,
    truncate: str = "round_robin",
    **extra: Any,
) -> pathlib.Path:
    """Writes a task model with everything needed to run it on raw text.

    Args:
        model: a kbert task model.
        directory: created if missing.
        tokenizer: the `BertTokenizer` the model was trained with.
        labels: class or tag names, in id order (None for regression and QA).
        sequence_length: the packing length used in training (the export's default).
        truncate: "round_robin" or "waterfall", as in training.
        **extra: more fields for task.json (e.g. the column names used).
    """
    task = task_of(model)
    if task in ("classify", "tag"):
        expected = model.num_classes if task == "classify" else model.num_labels
        if labels is None or len(labels) != expected:
            raise ValueError(f"A {task} model with {expected} outputs needs {expected} label names, got {labels}")
    directory = pathlib.Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    model.save(directory / "model.keras")
    tokenizer.save_vocabulary(directory)
    info = {"task": task, "labels": list(labels) if labels else None, "sequence_length": int(sequence_length),
            "truncate": truncate, "kbert_version": kbert_version(), **extra}
    (directory / "task.json").write_text(json.dumps(info, indent=2) + "\n", encoding="utf-8")
    return directory


def read_task_info(directory: str | os.PathLike) -> dict[str, Any]:
    path = pathlib.Path(directory) / "task.json"
    if not path.is_file():
        raise FileNotFoundError(f"{directory} is not a kbert model directory: no task.json")
    info = json.loads(path.read_text(encoding="utf-8"))
    if info.get("task") not in TASKS:
        raise ValueError(f"{path}: unknown task {info.get('task')!r}; expected one of {TASKS}")
    return info


def load_model(directory: str | os.PathLike, compile: bool = True) -> keras.Model:
    """Restores a fine-tuned model directory written by `save_model` / `kbert finetune`.

    Returns:
        The Keras task model, with attributes `tokenizer` (`BertTokenizer`), `preprocessor`
        (`BertPreprocessor` at the training sequence length), `label_names` (list or None), `task`
        ("classify", "regress", "tag" or "qa") and `task_info` (the whole task.json).
    """
    directory = pathlib.Path(directory)
    info = read_task_info(directory)
    model_file = directory / "model.keras"
    if not model_file.is_file():
        raise FileNotFoundError(f"{model_file} is missing")
    model = keras.saving.load_model(model_file, compile=False)
    if compile:
        model.compile()
    model.tokenizer = load_tokenizer(directory)
    model.preprocessor = BertPreprocessor(model.tokenizer, sequence_length=info["sequence_length"],
                                          truncate=info.get("truncate", "round_robin"))
    model.label_names = info.get("labels")
    model.task = info["task"]
    model.task_info = info
    return model


def kbert_version() -> str:
    from kbert import __version__

    return __version__
