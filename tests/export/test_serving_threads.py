"""Serving threads: batches one per core, run at once, and `kbert predict` as a process of its own (one thread a
product, weights laid out once) answering exactly what the export answers in a caller's process."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys
import threading

import numpy as np
import pytest

from kbert.cli.main import main
from kbert.export import export, serving_threads

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "export"))  # importlib mode: the shared export cases
import export_cases as cases  # noqa: E402


def test_batches_cover_every_row_once_and_feed_every_worker():
    for rows in range(0, 70):
        for size in (1, 4, 32):
            for workers in (1, 2, 3):
                parts = serving_threads.batches(rows, size, workers)
                assert [i for p in parts for i in p] == list(range(rows))
                assert all(0 < len(p) <= size for p in parts)
                assert len(parts) >= min(rows, workers)
    assert serving_threads.batches(64, 32, 2) == [range(0, 32), range(32, 64)]
    with pytest.raises(ValueError, match="batch size"):
        serving_threads.batches(3, 0, 2)


def test_run_in_flight_overlaps_its_calls_and_keeps_their_order():
    barrier = threading.Barrier(2, timeout=10)  # both calls must be running at once, or this breaks

    def call(part: range) -> list[int]:
        barrier.wait()
        return list(part)

    parts = [range(0, 2), range(2, 3)]
    assert serving_threads.run_in_flight(call, parts, workers=2) == [[0, 1], [2]]
    assert serving_threads.run_in_flight(lambda p: len(p), parts, workers=1) == [2, 1]


def test_the_serving_environment_keeps_what_the_user_set():
    env = {"TF_ONEDNN_ASSUME_FROZEN_WEIGHTS": "0"}
    assert serving_threads.apply_serving_environment(env) == {"TF_ONEDNN_ASSUME_FROZEN_WEIGHTS": "0"}
    env = {}
    assert serving_threads.apply_serving_environment(env) == serving_threads.SERVING_ENVIRONMENT == env


# `kbert predict` as the console script runs it, then what it set for the process.
OWN_PROCESS = """
import json, os, sys
from kbert.cli.main import main
code = main(sys.argv[1:], own_process=True)
import tensorflow as tf
print(json.dumps({"env": os.environ.get("TF_ONEDNN_ASSUME_FROZEN_WEIGHTS"),
                  "intra": tf.config.threading.get_intra_op_parallelism_threads()}))
sys.exit(code)
"""


def arguments(task: str) -> list[str]:
    inputs = cases.inputs_of(task)
    return [text for row in zip(*inputs.values()) for text in row]


def predict_here(capsys, path: pathlib.Path, task: str) -> list[dict]:
    capsys.readouterr()
    assert main(["predict", str(path), *arguments(task), "--workers", "1", "--batch-size", "100"]) == 0
    return [json.loads(line) for line in capsys.readouterr().out.splitlines()]


def predict_alone(path: pathlib.Path, task: str) -> tuple[list[dict], dict]:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    env.pop("TF_ONEDNN_ASSUME_FROZEN_WEIGHTS", None)
    proc = subprocess.run([sys.executable, "-c", OWN_PROCESS, "predict", str(path), *arguments(task),
                           "--batch-size", "1"], capture_output=True, text=True, cwd=ROOT, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    *rows, settings = proc.stdout.strip().splitlines()
    return [json.loads(row) for row in rows], json.loads(settings)


def assert_rows_equal(got: list[dict], want: list[dict], tolerance: float) -> None:
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert sorted(g) == sorted(w)
        for key in w:
            if isinstance(w[key], float) or (isinstance(w[key], list) and w[key] and isinstance(w[key][0], float)):
                np.testing.assert_allclose(g[key], w[key], atol=tolerance, err_msg=key)
            else:
                assert g[key] == w[key], key


@pytest.mark.slow
@pytest.mark.parametrize("precision", ["float32", "bfloat16"])
def test_predict_alone_answers_as_in_a_callers_process(tmp_path, capsys, precision):
    """Batches of one text through the same kernels, with weights laid out once: a product that took an
    activation for a weight would answer every later batch with the first one's."""
    sources = cases.sources()
    for task in ("classify", "tag", "qa", "encoder"):
        path = export(sources[task], tmp_path / precision / task / "1", precision=precision)
        want = predict_here(capsys, path, task)
        got, settings = predict_alone(path, task)
        assert settings == {"env": "1", "intra": 1}
        assert_rows_equal(got, want, 1e-5 if precision == "float32" else 2e-2)
    # The texts differ, so an answer repeated from an earlier batch would not pass.
    assert len({json.dumps(row["pooled_output"]) for row in want}) == len(want)
