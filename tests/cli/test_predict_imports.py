"""`kbert predict` loads only what the export needs: a `.tflite` file runs without TensorFlow or Keras, a
SavedModel without keras-hub or kbert's models."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys

import pytest

import kbert
from kbert.cli.main import main

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "export"))  # importlib mode: the shared export cases
import export_cases as cases  # noqa: E402

# Runs `kbert predict ...`, then prints the frameworks and kbert modules it imported, last.
RUN = """
import sys
from kbert.cli.main import main
code = main(sys.argv[1:])
print(sorted(m for m in sys.modules if m.split(".")[0] in
             ("tensorflow", "keras", "keras_hub", "tensorflow_text", "torch", "ai_edge_litert")
             and "." not in m) + sorted(m for m in sys.modules if m.startswith(("kbert.models", "kbert.tasks"))
                                        and m not in ("kbert.tasks", "kbert.tasks.registry")))
sys.exit(code)
"""
# (`import kbert` reads its task classes' names from the registry's lines: plain Python, no task module.)


@pytest.fixture(scope="module")
def export_dir(tmp_path_factory) -> pathlib.Path:
    source = cases.sources()["classify"]
    root = tmp_path_factory.mktemp("predict")
    kbert.save_model(source.model, root / "model", source.tokenizer, source.task, sequence_length=cases.SEQ)
    assert main(["export", str(root / "model"), "--out", str(root / "export"), "--tflite"]) == 0
    return root / "export"


def predict(target: pathlib.Path) -> tuple[list[dict], str]:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.run([sys.executable, "-c", RUN, "predict", str(target), "the good cat", "a bad dog"],
                          capture_output=True, text=True, cwd=ROOT, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    *rows, modules = proc.stdout.strip().splitlines()
    return [json.loads(row) for row in rows], modules


@pytest.mark.slow
def test_predict_imports_only_what_the_export_needs(export_dir):
    lite_rows, lite_modules = predict(export_dir / "model.tflite")
    assert lite_modules == "['ai_edge_litert']"
    saved_rows, saved_modules = predict(export_dir)
    # TensorFlow itself imports Keras (tensorflow/__init__.py loads keras.src.optimizers); nothing else.
    assert saved_modules == "['keras', 'tensorflow', 'tensorflow_text']"
    assert [r["label"] for r in lite_rows] == [r["label"] for r in saved_rows]
    for lite, saved in zip(lite_rows, saved_rows):
        assert abs(lite["probabilities"][0] - saved["probabilities"][0]) < 1e-4
