"""The one registry of task kinds: name -> `Task` class. Adding a task is its module plus a line here.

A line names the task class by its dotted path: the class (whose module imports TensorFlow) is imported
when first looked up. `COMMANDS` maps each `kbert finetune COMMAND` to the task's settings, a dataclass in
a module without TensorFlow that the task class extends, so the command's flags come without TensorFlow.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

from kbert.tasks.classification_settings import ClassificationSettings
from kbert.tasks.question_answering_settings import QuestionAnsweringSettings
from kbert.tasks.settings import TaskSettings
from kbert.tasks.tagging_settings import TaggingSettings

if TYPE_CHECKING:
    from kbert.tasks.base import Task


class _TaskClasses(Mapping):
    """name -> task class, each imported from its "module:Class" path on first lookup."""

    def __init__(self, paths: dict[str, str]) -> None:
        self._paths = paths
        self._classes: dict[str, type[Task]] = {}

    def __getitem__(self, name: str) -> type[Task]:
        if name not in self._classes:
            module, _, attribute = self._paths[name].partition(":")
            task = getattr(importlib.import_module(module), attribute)
            if task.name != name:
                raise TypeError(f"{self._paths[name]} is registered as {name!r} but is named {task.name!r}")
            self._classes[name] = task
        return self._classes[name]

    def __contains__(self, name: object) -> bool:
        return name in self._paths

    def __iter__(self) -> Iterator[str]:
        return iter(self._paths)

    def __len__(self) -> int:
        return len(self._paths)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._paths})"


REGISTRY: Mapping[str, type[Task]] = _TaskClasses({
    "classify": "kbert.tasks.classification:ClassificationTask",
    "regress": "kbert.tasks.classification:RegressionTask",
    "tag": "kbert.tasks.tagging:TaggingTask",
    "qa": "kbert.tasks.question_answering:QuestionAnsweringTask",
    "encoder": "kbert.tasks.encoder:EncoderTask",
})
# `kbert finetune COMMAND` -> the settings whose fields are its flags (`REGISTRY[settings.name]` extends them).
COMMANDS: dict[str, type[TaskSettings]] = {
    settings.command: settings for settings in (ClassificationSettings, TaggingSettings, QuestionAnsweringSettings)
}


def __getattr__(name: str) -> Any:
    # TASKS: tasks with a trained head, what a model directory's task.json may name. It looks at every task
    # class, so it is computed on first use.
    if name == "TASKS":
        tasks = tuple(name for name, task in REGISTRY.items() if task.model_class is not None)
        globals()["TASKS"] = tasks
        return tasks
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def get_task(name: str, **settings: Any) -> Task:
    """The task called `name` ("classify", "regress", "tag", "qa", "encoder") with `settings`.

    Example:
    >>> get_task("tag", tag_column="pos").tag_column
    'pos'
    """
    if name not in REGISTRY:
        raise ValueError(f"unknown task {name!r}; expected one of {tuple(REGISTRY)}")
    return REGISTRY[name](**settings)


def encoder_task() -> Task:
    """The task of a bare encoder checkpoint: its export serves sentence embeddings (`kbert export CHECKPOINT`)."""
    return get_task("encoder")


def task_from_info(info: dict[str, Any]) -> Task:
    """The task a task.json (or export config) dict describes."""
    name = info.get("task")
    if name not in REGISTRY:
        raise ValueError(f"unknown task {name!r}; expected one of {tuple(REGISTRY)}")
    return REGISTRY[name].from_info(info)

