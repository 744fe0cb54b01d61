"""Only the chief writes a run's outputs; other workers write to scratch, restore from the chief's backup."""

import json
import os

import keras
import pytest

from kbert.training.callbacks import StepCheckpoint, backup_dir, training_callbacks
from kbert.training.worker_outputs import backup_copy, remove_scratch, write_dir


def _as_worker(monkeypatch, index):
    monkeypatch.setenv("TF_CONFIG", json.dumps(
        {"cluster": {"worker": ["a:1", "b:2"]}, "task": {"type": "worker", "index": index}}))


@pytest.fixture(autouse=True)
def _clean():
    yield
    remove_scratch()


def test_the_chief_and_one_process_write_in_place(tmp_path, monkeypatch):
    monkeypatch.delenv("TF_CONFIG", raising=False)
    assert write_dir(tmp_path / "checkpoints") == str(tmp_path / "checkpoints")
    assert backup_copy(tmp_path / "backup") == str(tmp_path / "backup")
    _as_worker(monkeypatch, 0)
    assert write_dir(tmp_path / "checkpoints") == str(tmp_path / "checkpoints")


def test_other_workers_write_to_scratch_that_is_removed(tmp_path, monkeypatch):
    out = tmp_path / "out"
    (out / "backup").mkdir(parents=True)
    (out / "backup" / "training_metadata.json").write_text('{"epoch": 2, "batch": 0}')
    (out / "backup" / "latest.weights.h5").write_bytes(b"weights")
    _as_worker(monkeypatch, 1)
    scratch = write_dir(out / "checkpoints")
    copy = backup_copy(backup_dir(out))
    for path in (scratch, copy):
        assert not path.startswith(str(tmp_path)) and "kbert-worker-1-" in path
    assert os.path.basename(scratch) == "checkpoints"
    with open(os.path.join(copy, "training_metadata.json")) as f:  # the chief's backup, copied
        assert json.load(f)["epoch"] == 2
    callbacks = training_callbacks(out, 5, total_steps=20)
    assert [type(c) for c in callbacks] == [keras.callbacks.BackupAndRestore, StepCheckpoint]  # no TensorBoard
    assert not callbacks[0].backup_dir.startswith(str(tmp_path))
    assert not str(callbacks[1].directory).startswith(str(tmp_path))
    remove_scratch()
    assert not os.path.exists(scratch) and not os.path.exists(copy)
    assert sorted(os.listdir(out)) == ["backup"]  # nothing of worker 1's next to the chief's outputs
