"""`TaskSettings`: what every task's settings share, in a module without TensorFlow.

A task's settings are a dataclass: saved in a model directory's `task.json` and, unless a field says
`metadata={"cli": False}`, offered as `kbert finetune COMMAND` flags of the same name. Each task keeps its
settings in a small module of their own (`classification_settings`, ...) that its `Task` class extends, so
`kbert finetune COMMAND --help` reads the flags without importing TensorFlow.
"""

from __future__ import annotations

import dataclasses
from typing import ClassVar


@dataclasses.dataclass
class TaskSettings:
    """Base class of the tasks' settings.

    Args:
        labels: optional list of str. The label vocabulary in id order (tasks with named labels).

    Example:
    >>> TaskSettings(labels=["neg", "pos"]).labels
    ['neg', 'pos']
    """

    name: ClassVar[str] = ""                 # the name in task.json and the registry
    command: ClassVar[str | None] = None     # `kbert finetune COMMAND`; None: reached through another task
    summary: ClassVar[str] = ""              # one line for --help

    labels: list[str] | None = dataclasses.field(default=None, metadata={"cli": False})
