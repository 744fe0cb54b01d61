"""The one registry of task kinds: name -> `Task` class. Adding a task is its module plus a line here."""

from __future__ import annotations

from typing import Any

import keras

from kbert.tasks.base import Task
from kbert.tasks.classification import ClassificationTask, RegressionTask
from kbert.tasks.encoder import EncoderTask
from kbert.tasks.question_answering import QuestionAnsweringTask
from kbert.tasks.tagging import TaggingTask

REGISTRY: dict[str, type[Task]] = {
    task.name: task for task in (ClassificationTask, RegressionTask, TaggingTask, QuestionAnsweringTask, EncoderTask)
}
# Tasks with a trained head: what a model directory's task.json may name.
TASKS: tuple[str, ...] = tuple(name for name, task in REGISTRY.items() if task.model_class is not None)
# `kbert finetune COMMAND`.
COMMANDS: dict[str, type[Task]] = {task.command: task for task in REGISTRY.values() if task.command}


def get_task(name: str, **settings: Any) -> Task:
    """The task called `name` ("classify", "regress", "tag", "qa", "encoder") with `settings`.

    Example:
    >>> get_task("tag", tag_column="pos").tag_column
    'pos'
    """
    if name not in REGISTRY:
        raise ValueError(f"unknown task {name!r}; expected one of {tuple(REGISTRY)}")
    return REGISTRY[name](**settings)


def task_from_info(info: dict[str, Any]) -> Task:
    """The task a task.json (or export config) dict describes."""
    name = info.get("task")
    if name not in REGISTRY:
        raise ValueError(f"unknown task {name!r}; expected one of {tuple(REGISTRY)}")
    return REGISTRY[name].from_info(info)


def task_name_of(model: keras.Model) -> str:
    """The task name of a kbert task model; TypeError for anything else."""
    for name, task in REGISTRY.items():
        if task.matches(model):
            return name
    raise TypeError(f"Not a kbert task model: {type(model).__name__}")
