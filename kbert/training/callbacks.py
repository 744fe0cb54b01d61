"""Step-based checkpoints, crash-resume, held-out logs and TensorBoard for step-budgeted training with `fit`.

Pretraining counts optimizer steps, not epochs. Keras 3.15 `BackupAndRestore` restores only the
*epoch* it reached (its `save_freq=N` mid-epoch backups restart the epoch from batch 0, so a resumed
run overshoots the step budget). kbert therefore maps steps onto epochs: one Keras "epoch" is one
checkpoint interval of `save_every_steps` steps (`fit_steps`), `BackupAndRestore(save_freq="epoch")`
backs up at each interval, and a resumed run restarts exactly at the last saved step and stops at
`total_steps`. Feed `fit` an endless (`repeat()`ed) dataset; to continue the data stream where the
killed run was, `skip(restored_step(out_dir, save_every_steps))` batches.

The wall-clock callbacks, `TimeLimit` and `StepClock`, live in `kbert.training.time_callbacks`.
"""

from __future__ import annotations

import importlib.util
import json
import math
import os
import warnings
from typing import Any

import keras

import kbert.file_io as file_io
from kbert.training.strategy import is_chief
from kbert.training.worker_outputs import backup_copy, write_dir

__all__ = [
    "HeldoutLogger", "StepCheckpoint", "backup_dir", "fit_steps", "restored_step",
    "training_callbacks",
]


def _step(model: keras.Model) -> int:
    # Optimizer updates: Keras' `iterations` divides the batch counter by
    # `gradient_accumulation_steps`. `.numpy()` also works on a MirroredVariable (`int()` does not).
    return int(keras.ops.convert_to_numpy(model.optimizer.iterations))


class StepCheckpoint(keras.callbacks.Callback):
    """Saves the model weights every `save_every_steps` optimizer steps and stops at `total_steps`.

    Files are `directory/ckpt-{step}.weights.h5`; the step is the optimizer's `iterations`, i.e.
    optimizer updates (batches / `gradient_accumulation_steps`); only the newest `max_to_keep` are kept.
    Keras' `ModelCheckpoint` names files by epoch and batch and never prunes them, hence this small callback.

    Args:
        directory: str or path. Where the checkpoints go (created if missing).
        save_every_steps: int. Save when the step is a multiple of this.
        total_steps: int or None. Stop training (`model.stop_training`) once the step reaches it,
            and save there.
        max_to_keep: int or None. Newest checkpoints kept; None keeps all.

    Example:
    >>> callback = StepCheckpoint("/tmp/kbert-ckpt", save_every_steps=100, total_steps=1000)
    >>> callback.save_every_steps
    100
    """

    def __init__(
        self,
        directory: str | os.PathLike,
        save_every_steps: int,
        total_steps: int | None = None,
        max_to_keep: int | None = 3,
    ) -> None:
        super().__init__()
        if save_every_steps < 1:
            raise ValueError(f"save_every_steps must be >= 1, got {save_every_steps}")
        self.directory = file_io.fspath(directory)
        self.save_every_steps = int(save_every_steps)
        self.total_steps = total_steps
        self.max_to_keep = max_to_keep
        self._last_saved: int | None = None

    def checkpoints(self) -> list[str]:
        """The saved checkpoints, oldest first."""
        files = file_io.glob(file_io.join(self.directory, "ckpt-*.weights.h5"))
        return sorted(files, key=lambda p: int(file_io.basename(p)[len("ckpt-"):].split(".")[0]))

    def _save(self, step: int) -> None:
        file_io.makedirs(self.directory)
        # Keras stages a `.weights.h5` for a URL in a local temporary directory (h5py writes local files).
        self.model.save_weights(file_io.join(self.directory, f"ckpt-{step}.weights.h5"), overwrite=True)
        if self.max_to_keep:
            for old in self.checkpoints()[: -self.max_to_keep]:
                file_io.remove(old)

    def on_train_batch_end(self, batch: int, logs: dict[str, Any] | None = None) -> None:
        step = _step(self.model)
        done = self.total_steps is not None and step >= self.total_steps
        if (step % self.save_every_steps == 0 or done) and step != self._last_saved:
            self._save(step)
            self._last_saved = step
        if done:
            self.model.stop_training = True


def fit_steps(
    total_steps: int, save_every_steps: int, gradient_accumulation_steps: int = 1
) -> dict[str, int]:
    """`fit` arguments that run `total_steps` steps in checkpoint intervals of `save_every_steps`.

    Args:
        total_steps: int. The step budget, in optimizer updates.
        save_every_steps: int. Updates per checkpoint interval (= per Keras epoch).
        gradient_accumulation_steps: int. Batches per update.

    Returns:
        `{"epochs": ceil(total_steps / save_every_steps), "steps_per_epoch": save_every_steps *
        gradient_accumulation_steps}` (Keras' `steps_per_epoch` counts batches);
        `StepCheckpoint(total_steps=...)` stops the last, possibly partial, interval on time.

    Example:
    >>> fit_steps(1000, 300)
    {'epochs': 4, 'steps_per_epoch': 300}
    """
    if total_steps < 1 or save_every_steps < 1:
        raise ValueError(
            f"total_steps and save_every_steps must be >= 1, got {total_steps}, {save_every_steps}"
        )
    if gradient_accumulation_steps < 1:
        raise ValueError(
            f"gradient_accumulation_steps must be >= 1, got {gradient_accumulation_steps}"
        )
    return {
        "epochs": math.ceil(total_steps / save_every_steps),
        "steps_per_epoch": save_every_steps * gradient_accumulation_steps,
    }


def backup_dir(out_dir: str | os.PathLike) -> str:
    """The run's `BackupAndRestore` directory, `out_dir/backup`.

    The chief writes it; in a multi-worker job every other worker restores from a copy of it and
    backs up to scratch (`kbert.training.worker_outputs.backup_copy`), so all resume the same step.
    """
    return file_io.join(out_dir, "backup")


def restored_step(out_dir: str | os.PathLike, save_every_steps: int) -> int:
    """The step a run with `training_callbacks(out_dir, save_every_steps)` will resume from (0 if new).

    Use it before `fit` to `skip()` the batches the killed run already consumed (times
    `gradient_accumulation_steps` when gradients are accumulated).
    """
    metadata = file_io.join(backup_dir(out_dir), "training_metadata.json")
    if not file_io.exists(metadata):
        return 0
    try:
        epoch = int(json.loads(file_io.read_text(metadata))["epoch"])
    except (ValueError, KeyError, TypeError) as e:
        raise ValueError(f"{metadata}: unreadable Keras backup metadata ({e})") from None
    return epoch * save_every_steps


def training_callbacks(
    out_dir: str | os.PathLike,
    save_every_steps: int,
    total_steps: int | None = None,
    tensorboard: bool = True,
    log_every_steps: int = 100,
    max_to_keep: int | None = 3,
) -> list[keras.callbacks.Callback]:
    """The callbacks of a step-budgeted, resumable training run.

    - `keras.callbacks.BackupAndRestore(backup_dir(out_dir), save_freq="epoch")`: with
      `fit(**fit_steps(total_steps, save_every_steps))` one epoch is one checkpoint interval, so
      a run killed at any point restarts from the last interval's weights, optimizer state and
      step; the backup is deleted when training completes.
    - `StepCheckpoint(out_dir/"checkpoints", ...)`: kept checkpoints every `save_every_steps`,
      and the stop at `total_steps` (other workers save to scratch: `worker_outputs.write_dir`).
    - `keras.callbacks.TensorBoard(out_dir/"logs", update_freq=log_every_steps)` (chief only;
      skipped with a warning when the `tensorboard` package is not installed).
    Keras adds its progress bar itself (`fit(verbose=1)`). The model must be built before `fit`
    (a `BackupAndRestore` requirement).

    Args:
        out_dir: str or path. The run's output directory.
        save_every_steps: int. Checkpoint interval in steps.
        total_steps: int or None. Step budget; training stops there.
        tensorboard: bool. Whether to write TensorBoard logs.
        log_every_steps: int. TensorBoard scalar interval in steps.
        max_to_keep: int or None. Kept step checkpoints.

    Returns:
        A list of callbacks for `fit`.

    Example:
    >>> callbacks = training_callbacks("/tmp/kbert-run", save_every_steps=100, total_steps=1000)
    >>> [type(c).__name__ for c in callbacks][:2]
    ['BackupAndRestore', 'StepCheckpoint']
    """
    chief = is_chief()
    checkpoint_dir = write_dir(file_io.join(out_dir, "checkpoints"))  # other workers: scratch
    callbacks: list[keras.callbacks.Callback] = [
        keras.callbacks.BackupAndRestore(backup_copy(backup_dir(out_dir)), save_freq="epoch"),
        StepCheckpoint(checkpoint_dir, save_every_steps, total_steps, max_to_keep if chief else 1),
    ]
    if tensorboard and chief:
        if importlib.util.find_spec("tensorboard") is None:
            # tf.summary needs the `tensorboard` package; without it Keras' callback fails on
            # its first write, mid-training.
            warnings.warn("TensorBoard logs are off: the `tensorboard` package is not installed")
        else:
            callbacks.append(
                keras.callbacks.TensorBoard(file_io.join(out_dir, "logs"), update_freq=log_every_steps)
            )
    return callbacks


class HeldoutLogger(keras.callbacks.Callback):
    """Records the held-out metrics of each checkpoint interval, by optimizer step, for drawing curves.

    With `fit(validation_data=heldout, **fit_steps(...))` Keras evaluates the held-out set at the end of
    every checkpoint interval (one Keras epoch) and passes `val_*` metrics to `on_epoch_end`; this
    callback writes them as `directory/step_000500.json` (`{"step": 500, "mlm_accuracy": ...}`) and, if
    `tensorboard_dir` is given, as `heldout/<metric>` scalars against the step.

    Args:
        directory: str or path. Where the JSON files go (created if missing).
        tensorboard_dir: str, path or None. TensorBoard log directory; None writes no scalars.

    Example:
    >>> logger = HeldoutLogger("/tmp/kbert-run/heldout")
    >>> file_io.basename(logger.directory)
    'heldout'
    """

    def __init__(self, directory: str | os.PathLike, tensorboard_dir: str | os.PathLike | None = None) -> None:
        super().__init__()
        self.directory = file_io.fspath(directory)
        self.tensorboard_dir = tensorboard_dir
        if tensorboard_dir is not None and importlib.util.find_spec("tensorboard") is None:
            warnings.warn("Held-out TensorBoard scalars are off: the `tensorboard` package is not installed")
            self.tensorboard_dir = None
        self._writer = None

    def on_epoch_end(self, epoch: int, logs: dict[str, Any] | None = None) -> None:
        values = {k[len("val_"):]: float(v) for k, v in (logs or {}).items() if k.startswith("val_")}
        if not values:
            return
        step = _step(self.model)
        record = {"step": step, **values}
        file_io.write_json(file_io.join(self.directory, f"step_{step:06d}.json"), record)
        if self.tensorboard_dir is not None:
            import tensorflow as tf

            if self._writer is None:
                self._writer = tf.summary.create_file_writer(str(self.tensorboard_dir))
            with self._writer.as_default():
                for name, value in values.items():
                    tf.summary.scalar(f"heldout/{name}", value, step=step)
            self._writer.flush()
