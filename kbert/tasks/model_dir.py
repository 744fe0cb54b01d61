"""A fine-tuned model directory: the Keras model, its tokenizer, its task settings and labels.

    DIR/model.keras             the task's Keras model (a `BertTaskModel`), Keras' own format, without
                                optimizer state (`load_model` compiles afresh)
    DIR/vocab.txt               the tokenizer's vocabulary
    DIR/tokenizer_config.json   casing ({"do_lower_case": ...})
    DIR/task.json               {"task", "labels", "sequence_length", "truncate", task settings ...}
    DIR/metrics.json            validation metrics (written by `kbert finetune`)
    DIR/history.json            training loss and metrics per epoch (written by `kbert finetune`)
    DIR/...                     files of the task's own (`Task.write_extras`; the embed task writes what
                                sentence-transformers loads the directory with)

`kbert.load_model(DIR)` restores all of it; `kbert export DIR` reads it. Below `kbert.training` and
`kbert.export`, which both use it.
"""

from __future__ import annotations

import os
from typing import Any

import keras

import kbert.file_io as file_io
from kbert.tasks.registry import TASKS, task_from_info, task_name_of
from kbert.text import BertPreprocessor, BertTokenizer, load_tokenizer
from kbert.version import __version__

TASK_FILE = "task.json"


def save_model(
    model: keras.Model,
    directory: str | os.PathLike,
    tokenizer: BertTokenizer,
    labels: list[str] | None = None,
    sequence_length: int = 128,
    truncate: str = "round_robin",
    **extra: Any,
) -> str | os.PathLike:
    """Writes a task model with everything needed to run it on raw text.

    Args:
        model: a kbert task model (the `build_model` of a registered task).
        directory: created if missing.
        tokenizer: the `BertTokenizer` the model was trained with.
        labels: the label names in id order (None for tasks without named labels).
        sequence_length: the packing length used in training (the export's default).
        truncate: "round_robin" or "waterfall", as in training.
        **extra: more fields for task.json (the task's settings, e.g. the column names used).

    Returns:
        The directory, as given.
    """
    name = task_name_of(model)
    task = task_from_info({**extra, "task": name, "labels": labels})
    task.check_model(model)
    given, directory = directory, file_io.fspath(directory)
    file_io.makedirs(directory)
    # Without the optimizer: its moments are twice the weights (170 MB of 261 for all-MiniLM-L6-v2 with a
    # 2-class head) and `load_model` compiles a fresh one. Written aside, then renamed, so that an
    # interrupted save never leaves a truncated model.keras.
    optimizer = getattr(model, "optimizer", None)  # an uncompiled model has none
    partial = file_io.join(directory, "model.partial.keras")
    try:
        if optimizer is not None:
            model.optimizer = None
        model.save(partial)
    finally:
        if optimizer is not None:
            model.optimizer = optimizer
    file_io.rename(partial, file_io.join(directory, "model.keras"), overwrite=True)
    task.write_extras(model, directory, tokenizer, int(sequence_length))
    tokenizer.save_vocabulary(directory)
    info = {**extra, "task": name, "labels": list(labels) if labels else None,
            "sequence_length": int(sequence_length), "truncate": truncate, "kbert_version": __version__}
    file_io.write_json(file_io.join(directory, TASK_FILE), info)
    return given


def read_task_info(directory: str | os.PathLike) -> dict[str, Any]:
    """The task.json of a model directory; FileNotFoundError when there is none."""
    path = file_io.join(directory, TASK_FILE)
    if not file_io.isfile(path):
        raise FileNotFoundError(f"{directory} is not a kbert model directory: no {TASK_FILE}")
    info = file_io.read_json(path)
    if info.get("task") not in TASKS:
        raise ValueError(f"{path}: unknown task {info.get('task')!r}; expected one of {TASKS}")
    return info


def load_model(directory: str | os.PathLike, compile: bool = True) -> keras.Model:
    """Restores a fine-tuned model directory written by `save_model` / `kbert finetune`.

    Args:
        directory: the model directory.
        compile: bool. Compile the model with its default loss and metrics.

    Returns:
        The Keras task model, with attributes `tokenizer` (`BertTokenizer`), `preprocessor`
        (`BertPreprocessor` at the training sequence length), `label_names` (list or None), `task` (the
        `kbert.tasks.Task` with the saved settings), `task_name` (its name in `kbert.tasks.registry`)
        and `task_info` (the whole task.json).
    """
    directory = file_io.fspath(directory)
    info = read_task_info(directory)
    model_file = file_io.join(directory, "model.keras")
    if not file_io.isfile(model_file):
        raise FileNotFoundError(f"{model_file} is missing")
    # The task's module is imported first: it registers the Keras class that model.keras names.
    task = task_from_info(info)
    model = file_io.load_keras_model(model_file, compile=False)
    if compile:
        model.compile()
    model.tokenizer = load_tokenizer(directory)
    model.preprocessor = BertPreprocessor(model.tokenizer, sequence_length=info["sequence_length"],
                                          truncate=info.get("truncate", "round_robin"))
    model.label_names = info.get("labels")
    model.task = task
    model.task_name = info["task"]
    model.task_info = info
    return model
