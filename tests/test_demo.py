"""`kbert demo`, the README's main job: it runs offline and what it writes loads and answers."""

import os
import pathlib
import re
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]


def readme_commands() -> list[str]:
    block = re.search(r"```bash\n(.*?)```", (ROOT / "README.md").read_text(), re.S).group(1)
    return [line.split("#")[0].strip() for line in block.splitlines() if line.strip()]


def test_readme_commands_are_what_ci_runs():
    commands = readme_commands()
    assert len(commands) == 2 and "kbert demo" in commands[0] and "pytest" in commands[1]
    ci = (ROOT / ".ci" / "run").read_text()
    for command in commands:
        assert f"\n{command}\n" in ci, f"CI does not run the README command {command!r}"


@pytest.fixture(scope="module")
def demo_dir(tmp_path_factory) -> pathlib.Path:
    """The demo CI ran (KBERT_DEMO_DIR), or a short one run here."""
    given = os.environ.get("KBERT_DEMO_DIR")
    if given and pathlib.Path(given, "model", "task.json").is_file():
        return pathlib.Path(given)
    pytest.importorskip("kbert.pretrained").minilm_path()
    out = tmp_path_factory.mktemp("demo")
    result = subprocess.run(
        [sys.executable, "-m", "kbert.cli.main", "demo", "--out", str(out), "--epochs", "1",
         "--train-size", "64", "--pretrain-steps", "4"],
        capture_output=True, text=True, timeout=1500,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "SavedModel" in result.stdout and "model.tflite" in result.stdout
    return out


@pytest.mark.slow
def test_demo_exports_load_and_answer(demo_dir):
    import json

    export = sorted((demo_dir / "export" / "sentiment").iterdir(), key=lambda p: int(p.name))[-1]
    assert (export / "saved_model.pb").is_file() and (export / "model.tflite").is_file()
    assert 0.0 <= json.loads((demo_dir / "model" / "metrics.json").read_text())["accuracy"] <= 1.0
    # A fresh process that imports only tensorflow and tensorflow_text, as TF Serving would.
    script = (
        "import sys, tensorflow as tf, tensorflow_text\n"
        f"f = tf.saved_model.load({str(export)!r}).signatures['serving_default']\n"
        "out = f(text=tf.constant(['What a wonderful film.', 'Dull and painful.']))\n"
        "print(sorted(out), [x.decode() for x in out['label'].numpy()], out['probabilities'].shape)\n"
    )
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "'label'" in result.stdout and "'probabilities'" in result.stdout
    labels = re.search(r"\[('(?:negative|positive)', '(?:negative|positive)')\]", result.stdout)
    assert labels, result.stdout

    from kbert.export import tflite

    lite = tflite.run(tflite.interpreter(export / "model.tflite"), {"text": ["What a wonderful film."]})
    assert lite["probabilities"].shape == (1, 2)
    # The from-scratch part wrote a checkpoint that load_pretrained reads.
    import kbert

    assert kbert.load_pretrained(demo_dir / "pretraining" / "model").bert_config.num_hidden_layers == 2
