"""Callbacks that watch the wall clock: a time budget for a run, and the seconds a step takes.

`kbert.training.callbacks` re-exports both (`pretrain` imports them from there).
"""

from __future__ import annotations

import time
from typing import Any

import keras


class TimeLimit(keras.callbacks.Callback):
    """Stops training once `minutes` of wall time have passed since training began.

    For runs with a time budget rather than a step budget (benchmarks: "what does an hour reach?"). The
    learning-rate schedule still follows the step budget, so set `steps` to about what fits in the time.

    Args:
        minutes: float. The wall-time budget.

    Example:
    >>> TimeLimit(60).seconds
    3600.0
    """

    def __init__(self, minutes: float) -> None:
        super().__init__()
        self.seconds = float(minutes) * 60.0
        self._start: float | None = None

    def on_train_begin(self, logs: dict[str, Any] | None = None) -> None:
        self._start = time.monotonic()

    def on_train_batch_end(self, batch: int, logs: dict[str, Any] | None = None) -> None:
        if self._start is not None and time.monotonic() - self._start >= self.seconds:
            self.model.stop_training = True


class StepClock(keras.callbacks.Callback):
    """Measures the seconds an optimizer step takes once it is traced, everything in between included.

    The clock starts at the end of the first batch (so tracing and compiling are left out) and runs to the
    end of the last; the held-out evaluations and checkpoints inside that span count, as they do against
    a run's time budget. A timed pretraining run sizes its steps to its minutes with it
    (docs/investigations/pretraining-quality.md); `finetune` reports the end of the first batch
    (`first_batch_end`, a `time.monotonic()` reading) as the end of its "first step" phase.

    Args:
        batches_per_step: int. Batches an optimizer step takes (`gradient_accumulation_steps`).

    Example:
    >>> clock = StepClock()
    >>> clock.seconds_per_step is None  # fewer than two batches seen
    True
    """

    def __init__(self, batches_per_step: int = 1) -> None:
        super().__init__()
        self.batches_per_step = int(batches_per_step)
        self.first_batch_end: float | None = None
        self._last: float | None = None
        self._batches = 0

    def on_train_batch_end(self, batch: int, logs: dict[str, Any] | None = None) -> None:
        now = time.monotonic()
        if self.first_batch_end is None:
            self.first_batch_end = now
        else:
            self._last, self._batches = now, self._batches + 1

    @property
    def seconds_per_step(self) -> float | None:
        """Mean seconds a step after the first, or None before two batches have ended."""
        if not self._batches:
            return None
        return (self._last - self.first_batch_end) / self._batches * self.batches_per_step
