"""Step checkpoints, step budget, TensorBoard wiring, and resume after SIGKILL."""

import importlib.util
import json
import os
import signal
import time

import keras
import numpy as np
import pytest

from kbert.training.callbacks import (
    HeldoutLogger, StepCheckpoint, backup_dir, fit_steps, restored_step, training_callbacks,
)
from tests.training import _worker
from tests.training._training_subprocess import result, run_all, start


def test_fit_steps():
    assert fit_steps(12, 4) == {"epochs": 3, "steps_per_epoch": 4}
    assert fit_steps(10, 4) == {"epochs": 3, "steps_per_epoch": 4}
    assert fit_steps(10, 4, gradient_accumulation_steps=2) == {"epochs": 3, "steps_per_epoch": 8}
    with pytest.raises(ValueError, match="save_every_steps"):
        fit_steps(10, 0)


def test_heldout_logger_writes_validation_metrics_by_step(tmp_path):
    model = _worker.build_model()
    _worker.compile_model(model, num_train_steps=10)
    x, y = _worker.data()
    logger = HeldoutLogger(tmp_path / "heldout", tmp_path / "logs" if importlib.util.find_spec("tensorboard") else None)
    checkpoint = StepCheckpoint(tmp_path / "ckpt", save_every_steps=4, total_steps=10)
    model.fit(x, y, batch_size=2, verbose=0, validation_data=(x[:4], y[:4]), callbacks=[checkpoint, logger],
              **fit_steps(10, 4))
    names = sorted(p.name for p in (tmp_path / "heldout").iterdir())
    assert names == ["step_000004.json", "step_000008.json", "step_000010.json"]  # one per interval
    last = json.loads((tmp_path / "heldout" / "step_000010.json").read_text())
    assert last["step"] == 10 and "loss" in last and not any(k.startswith("val_") for k in last)
    assert np.isclose(last["loss"], model.evaluate(x[:4], y[:4], verbose=0, return_dict=True)["loss"], rtol=1e-5)
    if logger.tensorboard_dir is not None:
        assert list((tmp_path / "logs").glob("events.out.tfevents.*"))


def test_step_checkpoints_prune_and_stop_at_budget(tmp_path):
    model = _worker.build_model()
    _worker.compile_model(model, num_train_steps=10)
    checkpoint = StepCheckpoint(tmp_path / "ckpt", save_every_steps=3, total_steps=10, max_to_keep=2)
    x, y = _worker.data()
    # 10 steps is not a multiple of 3: 4 epochs of 3 batches, stopped after step 10.
    model.fit(x, y, batch_size=2, verbose=0, callbacks=[checkpoint], **fit_steps(10, 3))
    assert int(model.optimizer.iterations) == 10
    assert [os.path.basename(p) for p in checkpoint.checkpoints()] == ["ckpt-9.weights.h5", "ckpt-10.weights.h5"]
    restored = _worker.build_model()
    restored.load_weights(tmp_path / "ckpt" / "ckpt-10.weights.h5")
    for a, b in zip(model.get_weights(), restored.get_weights()):
        np.testing.assert_array_equal(a, b)


def test_training_callbacks_composition(tmp_path, monkeypatch):
    monkeypatch.delenv("TF_CONFIG", raising=False)
    callbacks = training_callbacks(tmp_path, 5, total_steps=20, tensorboard=False)
    assert [type(c) for c in callbacks] == [keras.callbacks.BackupAndRestore, StepCheckpoint]
    assert callbacks[1].total_steps == 20 and callbacks[1].directory == str(tmp_path / "checkpoints")
    if importlib.util.find_spec("tensorboard") is None:
        with pytest.warns(UserWarning, match="tensorboard"):
            callbacks = training_callbacks(tmp_path, 5)
        assert len(callbacks) == 2
    else:
        assert isinstance(training_callbacks(tmp_path, 5)[-1], keras.callbacks.TensorBoard)
    monkeypatch.setenv("TF_CONFIG", json.dumps(
        {"cluster": {"worker": ["a:1", "b:2"]}, "task": {"type": "worker", "index": 1}}))
    worker_callbacks = training_callbacks(tmp_path, 5)
    assert backup_dir(tmp_path) == str(tmp_path / "backup")  # the chief's; others restore from a copy
    assert len(worker_callbacks) == 2  # no TensorBoard off the chief


def test_restored_step_reads_keras_backup(tmp_path, monkeypatch):
    monkeypatch.delenv("TF_CONFIG", raising=False)
    assert restored_step(tmp_path, 4) == 0
    (tmp_path / "backup").mkdir()
    (tmp_path / "backup" / "training_metadata.json").write_text('{"epoch": 3, "batch": 0}')
    assert restored_step(tmp_path, 4) == 12
    (tmp_path / "backup" / "training_metadata.json").write_text("{}")
    with pytest.raises(ValueError, match="training_metadata.json"):
        restored_step(tmp_path, 4)


@pytest.mark.slow
def test_sigkill_mid_training_resumes_at_the_saved_step(tmp_path):
    total, save_every = 12, 4
    metadata = tmp_path / "backup" / "training_metadata.json"
    first = start("resume", tmp_path, total, save_every, 0.5, log=tmp_path / "first.log")
    try:
        deadline = time.monotonic() + 300
        while not metadata.exists():
            assert first.poll() is None, (tmp_path / "first.log").read_text()[-3000:]
            assert time.monotonic() < deadline, "no checkpoint within 300 s"
            time.sleep(0.05)
        first.send_signal(signal.SIGKILL)
        assert first.wait(timeout=30) == -signal.SIGKILL
    finally:
        if first.poll() is None:
            first.kill()
            first.wait()
    saved_step = json.loads(metadata.read_text())["epoch"] * save_every
    assert 0 < saved_step < total  # killed mid-training, after a checkpoint
    assert "RESULT" not in (tmp_path / "first.log").read_text()

    second_log = tmp_path / "second.log"
    run_all([start("resume", tmp_path, total, save_every, 0.0, log=second_log)], timeout=300)
    out = result(second_log)
    assert out["expected_start"] == saved_step
    assert out["start_step"] == saved_step  # restored weights, optimizer state and step
    assert out["iterations"] == total  # and the configured total, no more
    assert f"ckpt-{total}.weights.h5" in out["checkpoints"]
    assert not metadata.exists()  # Keras deletes the backup after a completed run
