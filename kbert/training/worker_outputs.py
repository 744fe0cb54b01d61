"""One set of outputs from a multi-worker run: the chief writes, the other workers write to scratch.

Keras 3's callbacks (`ModelCheckpoint`, `BackupAndRestore`, `TensorBoard`) have no chief-only logic:
under `MultiWorkerMirroredStrategy` every worker writes to the same path. Saving must still run on
every worker (reading synchronised variables may need the other workers), so kbert follows the
`write_filepath` pattern of TensorFlow's multi-worker guide:

- `write_dir(path)`: the chief gets `path`; any other worker a fresh local temporary directory.
- `backup_copy(backup_dir)`: the directory a worker's `BackupAndRestore` uses. The chief's is the
  run's backup; another worker gets a temporary copy of it, so that after a restart every worker
  resumes from the chief's state (the output directory must be on storage that every worker sees,
  such as gs://, as with TensorFlow's own multi-worker backup) and writes nothing next to it.
- `remove_scratch()`: deletes this process's temporary directories (also run at exit).

Without TF_CONFIG (one process) every helper returns the path it is given.
"""

from __future__ import annotations

import atexit
import tempfile

import kbert.file_io as file_io
from kbert.training.strategy import is_chief, read_tf_config

_SCRATCH: list[str] = []
# Files of a Keras `BackupAndRestore` directory (`latest.weights.h5` and its metadata).
_BACKUP_FILES = ("latest.weights.h5", "training_metadata.json")


def _worker_name() -> str:
    task = read_tf_config().get("task", {})
    return f"{task.get('type', 'worker')}-{task.get('index', 0)}"


def _scratch(name: str) -> str:
    if not _SCRATCH:
        atexit.register(remove_scratch)
    # A local directory on purpose: what a non-chief writes is thrown away, and must not land next
    # to the chief's outputs.
    root = tempfile.mkdtemp(prefix=f"kbert-{_worker_name()}-")
    _SCRATCH.append(root)
    return file_io.join(root, name or "out")


def write_dir(path: file_io.PathLike) -> str:
    """Where this worker writes what belongs at `path`: `path` itself on the chief, else scratch.

    Args:
        path: str or PathLike. The directory the run's outputs go to (a URL such as gs://... too).

    Returns:
        str. `path` on the chief (and without TF_CONFIG); a new temporary directory elsewhere,
        removed by `remove_scratch`.

    Example:
    >>> write_dir("/tmp/run/checkpoints")  # one process: the chief
    '/tmp/run/checkpoints'
    """
    path = file_io.fspath(path)
    if is_chief():
        return path
    return _scratch(file_io.basename(path))


def backup_copy(backup_dir: file_io.PathLike) -> str:
    """The directory this worker's `keras.callbacks.BackupAndRestore` reads and writes.

    The chief uses `backup_dir`, the run's backup. Another worker gets a temporary directory holding
    a copy of the chief's backup files, if there are any: it restores the same step and weights as
    the chief, and its own backups go to scratch.

    Args:
        backup_dir: str or PathLike. The run's backup directory, written by the chief.

    Returns:
        str. The directory to give `BackupAndRestore`.

    Example:
    >>> backup_copy("/tmp/run/backup")  # one process: the chief
    '/tmp/run/backup'
    """
    backup_dir = file_io.fspath(backup_dir)
    if is_chief():
        return backup_dir
    scratch = _scratch(file_io.basename(backup_dir))
    file_io.makedirs(scratch)
    for name in _BACKUP_FILES:
        source = file_io.join(backup_dir, name)
        if file_io.exists(source):
            file_io.copy(source, file_io.join(scratch, name), overwrite=True)
    return scratch


def remove_scratch() -> None:
    """Deletes the temporary directories this process made for `write_dir` and `backup_copy`."""
    while _SCRATCH:
        file_io.rmtree(_SCRATCH.pop())
