"""`--strategy tpu` without a TPU: the resolver and initialisation order with stand-ins, and the errors
TensorFlow raises on this CPU host, rephrased."""

import os
import subprocess
import sys

import pytest
import tensorflow as tf

from kbert.training.strategy import get_strategy, tpu_strategy


class FakeResolver:
    def __init__(self, tpu=None, **kwargs):
        self.tpu = tpu


@pytest.fixture
def calls(monkeypatch):
    """Replaces the four TPU steps with recorders; returns the list of (step, argument) they append to."""
    seen = []

    def resolver(tpu=None, **kwargs):
        seen.append(("resolver", tpu))
        return FakeResolver(tpu)

    monkeypatch.setattr(tf.distribute.cluster_resolver, "TPUClusterResolver", resolver)
    monkeypatch.setattr(tf.config, "experimental_connect_to_cluster", lambda r: seen.append(("connect", r)))
    monkeypatch.setattr(tf.tpu.experimental, "initialize_tpu_system", lambda r: seen.append(("initialize", r)))
    monkeypatch.setattr(tf.distribute, "TPUStrategy", lambda r: seen.append(("strategy", r)) or "tpu-strategy")
    return seen


@pytest.mark.parametrize("address", ["local", "grpc://10.0.0.2:8470", None])
def test_resolver_connect_initialize_strategy_in_order(calls, address):
    assert get_strategy("tpu", tpu=address) == "tpu-strategy"
    assert [step for step, _ in calls] == ["resolver", "connect", "initialize", "strategy"]
    resolver = calls[1][1]
    assert calls[0][1] == address and resolver.tpu == address  # None: the resolver reads TPU_NAME
    assert all(argument is resolver for _, argument in calls[1:])  # one resolver throughout


def test_auto_never_probes_for_a_tpu(calls, monkeypatch):
    monkeypatch.delenv("TF_CONFIG", raising=False)
    get_strategy("auto")
    assert calls == []


def test_initialisation_failure_is_named(calls, monkeypatch):
    def fail(resolver):
        raise tf.errors.NotFoundError(None, None, "TPUs not found in the cluster.\nmore detail")

    monkeypatch.setattr(tf.tpu.experimental, "initialize_tpu_system", fail)
    with pytest.raises(ValueError, match=r"no TPU could be initialised with --tpu local: TPUs not found in the "
                                         r"cluster\. On a Cloud TPU VM pass --tpu local") as info:
        tpu_strategy("local")
    assert isinstance(info.value.__cause__, tf.errors.NotFoundError)
    assert [step for step, _ in calls] == ["resolver", "connect"]


def test_no_tpu_name_on_this_host(monkeypatch):
    # TensorFlow's own resolver, off Google Cloud and without TPU_NAME: "Please provide a TPU Name".
    monkeypatch.delenv("TPU_NAME", raising=False)
    with pytest.raises(ValueError, match=r"--strategy tpu: no TPU found with no --tpu .*TPU Name") as info:
        get_strategy("tpu")
    assert isinstance(info.value.__cause__, ValueError)


def test_local_tpu_missing_on_this_host():
    # The real steps with --tpu local on this CPU host: TensorFlow raises NotFoundError from
    # initialize_tpu_system. A subprocess, since connecting changes the process's TensorFlow context.
    code = ("from kbert.training.strategy import get_strategy\n"
            "try:\n    get_strategy('tpu', tpu='local')\n"
            "except ValueError as e:\n    print('ERROR', e, type(e.__cause__).__name__)\n")
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env=env,
                         cwd=os.getcwd())
    assert "ERROR --strategy tpu: no TPU could be initialised with --tpu local: TPUs not found" in out.stdout, (
        out.stdout + out.stderr[-2000:])
    assert out.stdout.strip().endswith("NotFoundError")
