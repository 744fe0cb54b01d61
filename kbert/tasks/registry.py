"""The one registry of task kinds: a new task is its own modules plus one `register` call.

    register("classify", "kbert.tasks.classification:ClassificationTask",
             settings="kbert.tasks.classification_settings:ClassificationSettings",
             model="kbert.tasks.classification_model:BertClassifier")

names the task class, the settings it extends and its Keras model by dotted path, so that nothing is
imported until it is looked up: the task class (whose module imports TensorFlow) on first use, the settings
(a module without TensorFlow) when the CLI builds `kbert finetune COMMAND`'s flags. Everything else is derived
from these lines: `REGISTRY` (name -> task class), `COMMANDS` (`kbert finetune COMMAND` -> settings), `TASKS`
(the tasks a model directory may hold) and the public names of `kbert` and `kbert.tasks` (`public_names`).
A task registered by another package (`register(...)` when its module is imported) gets all of these too:
its command, its model directories, its export and `kbert predict`.
"""

from __future__ import annotations

import dataclasses
import importlib
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from kbert.tasks.base import Task
    from kbert.tasks.settings import TaskSettings


@dataclasses.dataclass(frozen=True)
class TaskEntry:
    """One registered task kind, each part a "module:Class" path.

    Args:
        task: the `Task` class.
        settings: the TF-free `TaskSettings` class the task extends, for a task with its own `kbert finetune`
            command (None: the task is reached through another's command, or has none).
        model: the task's Keras model class (None: a task without a trained head).
    """

    task: str
    settings: str | None = None
    model: str | None = None


_ENTRIES: dict[str, TaskEntry] = {}


def _load(path: str) -> Any:
    module, _, attribute = path.partition(":")
    return getattr(importlib.import_module(module), attribute)


def register(name: str, task: str, *, settings: str | None = None, model: str | None = None) -> None:
    """Registers the task `name`; see the module docstring.

    Raises:
        ValueError: `name` is taken, or a path is not "module:Class".
    """
    if name in _ENTRIES:
        raise ValueError(f"a task named {name!r} is registered already ({_ENTRIES[name].task})")
    for path in (task, settings, model):
        if path is not None and path.count(":") != 1:
            raise ValueError(f"{path!r} is not a 'module:Class' path")
    _ENTRIES[name] = TaskEntry(task, settings, model)


def unregister(name: str) -> None:
    """Removes the task `name` (a task registered for a test, or by mistake)."""
    _ENTRIES.pop(name)
    _TaskClasses.loaded.pop(name, None)


class _TaskClasses(Mapping):
    """name -> task class, each imported from its path on first lookup."""

    loaded: dict[str, type[Task]] = {}

    def __getitem__(self, name: str) -> type[Task]:
        if name not in self.loaded:
            task = _load(_ENTRIES[name].task)
            if task.name != name:
                raise TypeError(f"{_ENTRIES[name].task} is registered as {name!r} but is named {task.name!r}")
            self.loaded[name] = task
        return self.loaded[name]

    def __iter__(self) -> Iterator[str]:
        return iter(list(_ENTRIES))

    def __len__(self) -> int:
        return len(_ENTRIES)

    def __contains__(self, name: object) -> bool:
        return name in _ENTRIES

    def __repr__(self) -> str:
        return f"REGISTRY({ {name: entry.task for name, entry in _ENTRIES.items()} })"


class _Commands(Mapping):
    """`kbert finetune COMMAND` -> the settings whose fields are its flags (`REGISTRY[settings.name]` extends
    them); TF-free: only the settings modules are imported."""

    def _table(self) -> dict[str, type[TaskSettings]]:
        table = {}
        for name, entry in _ENTRIES.items():
            settings = _load(entry.settings) if entry.settings else None
            if settings is not None and settings.command:
                if settings.name != name:
                    raise TypeError(f"{entry.settings} is registered for {name!r} but is named {settings.name!r}")
                table[settings.command] = settings
        return table

    def __getitem__(self, command: str) -> type[TaskSettings]:
        return self._table()[command]

    def __iter__(self) -> Iterator[str]:
        return iter(self._table())

    def __len__(self) -> int:
        return len(self._table())


REGISTRY: Mapping[str, type[Task]] = _TaskClasses()
COMMANDS: Mapping[str, type[TaskSettings]] = _Commands()


def public_names() -> dict[str, str]:
    """Class name -> module of every registered task class and task model class: the names `kbert` and
    `kbert.tasks` export, read from the registry lines without importing anything.

    Example:
    >>> public_names()["BertClassifier"]
    'kbert.tasks.classification_model'
    """
    names = {}
    for entry in _ENTRIES.values():
        for path in (entry.task, entry.model):
            if path is not None:
                module, _, attribute = path.partition(":")
                names[attribute] = module
    return names


def __getattr__(name: str) -> Any:
    # TASKS: tasks with a trained head, what a model directory's task.json may name. It looks at every task
    # class (TensorFlow), so it is computed when asked for.
    if name == "TASKS":
        return tuple(name for name, entry in _ENTRIES.items() if entry.model is not None)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def get_task(name: str, **settings: Any) -> Task:
    """The task called `name` (e.g. "classify", "regress", "tag", "qa", "encoder") with `settings`.

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


# kbert's own tasks. One line each: the task, the settings its command's flags come from, its Keras model.
register("classify", "kbert.tasks.classification:ClassificationTask",
         settings="kbert.tasks.classification_settings:ClassificationSettings",
         model="kbert.tasks.classification_model:BertClassifier")
register("regress", "kbert.tasks.classification:RegressionTask",
         model="kbert.tasks.classification_model:BertClassifier")
register("tag", "kbert.tasks.tagging:TaggingTask", settings="kbert.tasks.tagging_settings:TaggingSettings",
         model="kbert.tasks.tagging_model:BertTokenClassifier")
register("qa", "kbert.tasks.question_answering:QuestionAnsweringTask",
         settings="kbert.tasks.question_answering_settings:QuestionAnsweringSettings",
         model="kbert.tasks.question_answering_model:BertQuestionAnswerer")
register("embed", "kbert.tasks.embedding:EmbeddingTask",
         settings="kbert.tasks.embedding_settings:EmbeddingSettings",
         model="kbert.tasks.embedding_model:BertSentenceEmbedder")
register("encoder", "kbert.tasks.encoder:EncoderTask")
