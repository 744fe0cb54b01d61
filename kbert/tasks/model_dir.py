"""A fine-tuned model directory: the Keras model, its tokenizer, its task settings and labels.

    DIR/model.keras             the task's Keras model (a `BertTaskModel`), Keras' own format, without
                                optimizer state (`load_model` compiles afresh)
    DIR/vocab.txt, or vocab.json + merges.txt, ...
                                the tokenizer's own files (its `save_vocabulary`), read back by
                                `kbert.load_tokenizer`
    DIR/tokenizer_config.json   the tokenizer's settings (e.g. {"do_lower_case": ...})
    DIR/task.json               the task: {"task": name, "labels", its other settings ..., and
                                "sequence_length", "truncate", "kbert_version"}
    DIR/metrics.json            validation metrics (written by `kbert finetune`)
    DIR/history.json            training loss and metrics per epoch (written by `kbert finetune`)
    DIR/...                     files of the task's own (`Task.write_extras`; the embed task writes what
                                sentence-transformers loads the directory with)

`kbert.save_model(model, DIR, tokenizer, task)` writes it and `kbert.load_model(DIR)` restores all of it,
the task whole as `model.task`; `kbert export DIR` reads it. Below `kbert.training` and
`kbert.export`, which both use it.
"""

from __future__ import annotations

import os
from typing import Any

import keras

import kbert.file_io as file_io
from kbert.tasks.base import Task
from kbert.tasks import registry
from kbert.tasks.registry import REGISTRY, task_from_info
from kbert.text import BertPreprocessor, BertTokenizer, load_tokenizer
from kbert.version import __version__

TASK_FILE = "task.json"
SIGNATURE = 'save_model(model, directory, tokenizer, task, sequence_length=128, truncate="round_robin")'


def save_model(
    model: keras.Model,
    directory: str | os.PathLike,
    tokenizer: BertTokenizer,
    task: Task,
    sequence_length: int = 128,
    truncate: str = "round_robin",
) -> str | os.PathLike:
    """Writes a task model with everything needed to run it on raw text: the model, tokenizer and task.

    Args:
        model: a kbert task model (`task.build_model(...)`, or e.g. a `BertClassifier` built directly).
        directory: created if missing.
        tokenizer: the tokenizer the model was trained with (`BertTokenizer`, `ByteLevelBpeTokenizer`, ...).
        task: the `kbert.tasks.Task` of the model, with its settings and labels (e.g.
            `ClassificationTask(labels=["negative", "positive"])`); saved whole in task.json and rebuilt
            by `load_model` as `model.task`.
        sequence_length: the packing length used in training (the export's default).
        truncate: "round_robin" or "waterfall", as in training.

    Returns:
        The directory, as given.

    Raises:
        TypeError: `task` is not a `Task` (e.g. a list of labels, what this argument used to be).
        ValueError: the task is not a registered one (`load_model` could not rebuild it), the model is
            not the task's model (e.g. a tagging model with a classify task), or the model and the task's
            settings disagree (e.g. the number of labels).

    Example:
    >>> from kbert.models.bert_encoder import BertEncoder
    >>> from kbert.tasks import BertClassifier, ClassificationTask
    >>> tokenizer = BertTokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "good", "film"])
    >>> encoder = BertEncoder(vocab_size=8, hidden_size=8, num_hidden_layers=1, num_attention_heads=2,
    ...                       intermediate_size=16)
    >>> task = ClassificationTask(labels=["negative", "positive"])
    >>> directory = save_model(BertClassifier(encoder, 2), "ram://sst2_model", tokenizer, task, 16)
    >>> model = load_model(directory)
    >>> model.task == task, model.preprocessor.sequence_length
    (True, 16)
    """
    _check_task(model, task)
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
    info = {**task.info(), "sequence_length": int(sequence_length), "truncate": truncate,
            "kbert_version": __version__}
    file_io.write_json(file_io.join(directory, TASK_FILE), info)
    return given


def _check_task(model: keras.Model, task: Task) -> None:
    """Raises unless `task` is a registered `Task` whose model `model` is, with settings that fit it.

    Args:
        model: the Keras task model.
        task: what `save_model` was given as the task.

    Raises:
        TypeError: `task` is not a `Task`.
        ValueError: the task is not registered, or the model is not its model or disagrees with it.
    """
    if not isinstance(task, Task):
        raise TypeError(f"{SIGNATURE}: task must be a kbert.tasks.Task (e.g. ClassificationTask(labels=[...])), "
                        f"got {type(task).__name__} {task!r:.80}")
    if REGISTRY.get(task.name) is not type(task):
        raise ValueError(f"{type(task).__name__} ({task.name!r}) is not the registered {task.name!r} task "
                         f"(kbert.tasks.registry): load_model could not rebuild it from task.json")
    if not task.matches(model):
        built = (f"{type(task).__name__}.build_model makes a {task.model_class.__name__} of its own kind"
                 if task.model_class else f"{type(task).__name__} has no trained model")
        raise ValueError(f"the model, a {type(model).__name__}, is not the {task.name} task's model ({built}): "
                         f"save a model with the task that built it")
    task.check_model(model)


def read_task_info(directory: str | os.PathLike) -> dict[str, Any]:
    """The task.json of a model directory; FileNotFoundError when there is none."""
    path = file_io.join(directory, TASK_FILE)
    if not file_io.isfile(path):
        raise FileNotFoundError(f"{directory} is not a kbert model directory: no {TASK_FILE}")
    info = file_io.read_json(path)
    tasks = registry.TASKS  # read now: a task registered after this module was imported counts
    if info.get("task") not in tasks:
        raise ValueError(f"{path}: unknown task {info.get('task')!r}; expected one of {tasks}")
    return info


def load_model(directory: str | os.PathLike, compile: bool = True) -> keras.Model:
    """Restores a fine-tuned model directory written by `save_model` / `kbert finetune`.

    Args:
        directory: the model directory.
        compile: bool. Compile the model with its default loss and metrics.

    Returns:
        The Keras task model, with three attributes: `task` (the `kbert.tasks.Task` that was saved, with
        its settings and labels: `model.task.labels`, `model.task.name`, `model.task.info()`), `tokenizer`
        (`BertTokenizer`) and `preprocessor` (`BertPreprocessor` at the training sequence length and
        truncation).
    """
    directory = file_io.fspath(directory)
    info = read_task_info(directory)
    model_file = file_io.join(directory, "model.keras")
    if not file_io.isfile(model_file):
        raise FileNotFoundError(f"{model_file} is missing")
    # The task's module is imported first: it registers the Keras class that model.keras names; so do the
    # families' encoder modules (a RoBERTa model names `RobertaEncoder`, registered where it is defined).
    task = task_from_info(info)
    import kbert.models.families  # noqa: F401
    model = file_io.load_keras_model(model_file, compile=False)
    if compile:
        model.compile()
    model.tokenizer = load_tokenizer(directory)
    model.preprocessor = BertPreprocessor(model.tokenizer, sequence_length=info["sequence_length"],
                                          truncate=info.get("truncate", "round_robin"))
    model.task = task
    return model
