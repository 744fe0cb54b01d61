"""get_strategy, TF_CONFIG parsing, batch/lr scaling, and MirroredStrategy on 2 logical CPUs."""

import json
import types

import numpy as np
import pytest
import tensorflow as tf

from kbert.training import strategy as strategy_module
from kbert.training.strategy import (
    get_strategy, is_chief, num_workers, read_tf_config, scale_batch_and_lr,
)

from tests.training._training_subprocess import result, run_all, start


def _cluster(task_type="worker", index=0, chief=False):
    cluster = {"worker": ["127.0.0.1:1", "127.0.0.1:2"]}
    if chief:
        cluster["chief"] = ["127.0.0.1:3"]
    return json.dumps({"cluster": cluster, "task": {"type": task_type, "index": index}})


def test_tf_config_parsing(monkeypatch):
    monkeypatch.delenv("TF_CONFIG", raising=False)
    assert read_tf_config() == {} and num_workers() == 1 and is_chief()
    monkeypatch.setenv("TF_CONFIG", _cluster("worker", 0))
    assert num_workers() == 2 and is_chief()
    monkeypatch.setenv("TF_CONFIG", _cluster("worker", 1))
    assert not is_chief()
    monkeypatch.setenv("TF_CONFIG", _cluster("worker", 0, chief=True))
    assert num_workers() == 3 and not is_chief()
    monkeypatch.setenv("TF_CONFIG", _cluster("chief", 0, chief=True))
    assert is_chief()


@pytest.mark.parametrize(
    "raw, match",
    [
        ("{not json", "TF_CONFIG is not valid JSON"),
        ('{"task": {}}', "needs a 'cluster'"),
        (_cluster("worker", 5), "index 5 is out of range"),
        (_cluster("ps", 0), "task type 'ps' is not in its cluster"),
    ],
)
def test_bad_tf_config_is_named(monkeypatch, raw, match):
    monkeypatch.setenv("TF_CONFIG", raw)
    with pytest.raises(ValueError, match=match):
        read_tf_config()
    with pytest.raises(ValueError, match=match):
        get_strategy("multi_worker")


def test_single_device_strategies(monkeypatch):
    monkeypatch.delenv("TF_CONFIG", raising=False)
    one = get_strategy("one_device")
    assert isinstance(one, tf.distribute.OneDeviceStrategy) and one.num_replicas_in_sync == 1
    auto = get_strategy("auto")  # no GPU, no cluster: TensorFlow's default strategy
    assert auto is tf.distribute.get_strategy() and auto.num_replicas_in_sync == 1
    with pytest.raises(ValueError, match="strategy must be one of"):
        get_strategy("horovod")


def test_auto_picks_multi_worker_from_tf_config(monkeypatch):
    monkeypatch.setenv("TF_CONFIG", _cluster("worker", 0))
    created = []
    monkeypatch.setattr(strategy_module.tf.distribute, "MultiWorkerMirroredStrategy",
                        lambda: created.append(1) or "mwms")
    assert get_strategy("auto") == "mwms" and created == [1]


@pytest.mark.parametrize("scaling, lr", [("linear", 4e-4), ("sqrt", 2e-4), ("none", 1e-4)])
def test_scale_batch_and_lr(scaling, lr):
    four = types.SimpleNamespace(num_replicas_in_sync=4)
    batch, scaled = scale_batch_and_lr(32, 1e-4, four, scaling=scaling)
    assert batch == 128
    assert scaled == pytest.approx(lr)
    assert scale_batch_and_lr(32, 1e-4, tf.distribute.get_strategy()) == (32, 1e-4)
    with pytest.raises(ValueError, match="scaling"):
        scale_batch_and_lr(32, 1e-4, four, scaling="cubic")


@pytest.mark.slow
def test_mirrored_strategy_on_two_logical_cpus_trains(tmp_path):
    log = tmp_path / "mirrored.log"
    run_all([start("mirrored", tmp_path, log=log)], timeout=300)
    out = result(log)
    assert out["replicas"] == 2
    assert out["scaled"] == [16, 2e-4]
    assert out["iterations"] == 16  # 2 epochs x 8 global batches
    assert out["loss"][1] < out["loss"][0]
    # Same initial weights and data: 2 replicas x 4 examples == 1 device x 8 examples.
    assert out["max_abs_diff_vs_single_device"] < 1e-5
    # Gradient accumulation under the same strategy: 2 batches of 4 (2 per replica) per update give the
    # weights of single-device updates on batches of 8.
    assert out["accumulation_iterations"] == 16
    assert out["accumulation_max_abs_diff_vs_single_device"] < 1e-5 < out["trained_distance"]
    assert np.isfinite(out["loss"]).all()
