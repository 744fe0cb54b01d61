"""The whole journey on `ram://`, TensorFlow's in-memory file system, in one process.

ram:// goes through the same `tf.io.gfile` layer as gs:// and hdfs://, so this is the offline stand-in for
cloud storage: fine-tune -> evaluate -> export (with TFLite) -> predict (SavedModel and TFLite), and
create-pretraining-data -> pretrain (killed mid-run, then resumed from its checkpoint) -> load. Inputs are
written to ram:// and every output goes there; nothing may reach the local disk.

The local-disk check: the run's working directory and its temporary directory start empty and must end
empty, and a Python audit hook sees every file the interpreter opens for writing, creates, renames or
deletes. Two writers in TensorFlow's and Keras' own code are expected and named: AutoGraph writes the
Python it generates to the temporary directory, and Keras stages a `.weights.h5` file (and a `.keras`
file's assets) for a URL in a temporary directory it deletes afterwards (h5py writes only local files). Anything else fails the test,
naming the file and the code that wrote it.
"""

from __future__ import annotations

import json
import os
import sys
import sysconfig
import tempfile
import uuid

import pytest
import tensorflow as tf

import kbert
from kbert.cli.main import main
from tests.conftest import TINY_VOCAB

STDLIB = os.path.realpath(sysconfig.get_paths()["stdlib"])
# Where the expected local writes come from (the first frame outside the standard library).
EXPECTED_WRITERS = {
    os.path.join("keras", "src", "saving"): "Keras stages .weights.h5 and a model's assets for a URL locally",
    os.path.join("tensorflow", "python", "autograph"): "AutoGraph's generated code",
    "__autograph_generated_file": "AutoGraph's generated code",
}
WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC
WRITE_EVENTS = {"os.mkdir", "os.rename", "os.remove", "os.rmdir", "shutil.copyfile", "shutil.rmtree",
                "tempfile.mkdtemp", "tempfile.mkstemp", "os.truncate"}

_watch: dict | None = None


def _writer() -> tuple[str, str | None]:
    """Who asked for a write: walking out from the innermost frame past the standard library and other
    libraries' helpers, the first frame of an expected writer (then: why), or of any other code (None)."""
    frame, first = sys._getframe(2), None
    while frame is not None:
        name = os.path.realpath(frame.f_code.co_filename)
        frame = frame.f_back
        if (name.startswith(STDLIB) and "site-packages" not in name) or "<frozen" in name:
            continue
        why = next((w for key, w in EXPECTED_WRITERS.items() if key in name), None)
        if why or "site-packages" not in name:
            return name, why
        first = first or name
    return first or "?", None


def _audit(event: str, args: tuple) -> None:
    if _watch is None:
        return
    if event == "open":
        path, mode, flags = args
        writes = (isinstance(mode, str) and any(c in mode for c in "wxa+")) or (
            mode is None and isinstance(flags, int) and flags & WRITE_FLAGS)
        paths = [path] if writes else []
    elif event in WRITE_EVENTS:
        paths = [a for a in args[:2] if isinstance(a, (str, bytes, os.PathLike))]
    else:
        return
    for path in paths:
        path = os.fsdecode(path) if isinstance(path, (str, bytes, os.PathLike)) else path
        if not isinstance(path, str) or "://" in path or path.startswith(("/dev/", "/proc/", "/sys/")):
            continue
        if path.endswith(".pyc") or "__pycache__" in path:
            continue  # the interpreter's bytecode cache
        writer, why = _writer()
        _watch["expected" if why else "unexpected"].append((event, path, writer, why))


sys.addaudithook(_audit)  # hooks cannot be removed; it records only while `_watch` is set


def _write_inputs(root: str) -> dict[str, str]:
    files = {
        "vocab": f"{root}/in/vocab.txt",
        "train": f"{root}/in/sst/train.tsv",
        "dev": f"{root}/in/sst/dev.tsv",
        "corpus": f"{root}/in/corpus/part-0.txt",
    }
    good = ["the cat sat on a good mat .", "a good dog ran !", "the good cat ran on the mat ."]
    bad = ["the cat sat on a bad mat .", "a bad dog ran ?", "the bad dog sat on the mat ."]
    rows = [f"{t}\t1" for t in good] + [f"{t}\t0" for t in bad]
    sentences = ["the cat sat on the mat .", "a dog ran !", "the good dog sat .", "a cat ran on a mat .",
                 "the bad cat sat .", "a good mat !"]
    documents = ["\n".join(sentences[i:] + sentences[:i]) for i in range(6)]
    contents = {
        "vocab": "\n".join(TINY_VOCAB) + "\n",
        "train": "sentence\tlabel\n" + "\n".join(rows * 4) + "\n",
        "dev": "sentence\tlabel\n" + "\n".join(rows) + "\n",
        "corpus": "\n\n".join(documents) + "\n",
    }
    for key, path in files.items():
        tf.io.gfile.makedirs(os.path.dirname(path))
        with tf.io.gfile.GFile(path, "w") as f:
            f.write(contents[key])
    return files


def _json_lines(text: str) -> list[dict]:
    return [json.loads(line) for line in text.splitlines() if line.startswith("{")]


class _Interrupted(Exception):
    pass


@pytest.mark.slow
def test_whole_journey_on_ram(tmp_path, monkeypatch, capsys):
    global _watch
    root = f"ram://kbert-journey-{uuid.uuid4().hex[:8]}"
    files = _write_inputs(root)
    workdir, local_tmp = tmp_path / "cwd", tmp_path / "tmp"
    workdir.mkdir()
    local_tmp.mkdir()
    monkeypatch.chdir(workdir)
    monkeypatch.setenv("TMPDIR", str(local_tmp))
    monkeypatch.setattr(tempfile, "tempdir", str(local_tmp))
    monkeypatch.delenv("TF_CONFIG", raising=False)
    steps = []
    _watch = {"expected": [], "unexpected": []}
    try:
        # 1. fine-tune a classifier from random tiny weights
        model_dir = f"{root}/models/sst"
        assert main(["finetune", "classify", "--preset", "tiny", "--vocab", files["vocab"], "--train",
                     files["train"], "--validation", files["dev"], "--text-column", "sentence",
                     "--sequence-length", "16", "--epochs", "1",
                     "--batch-size", "8", "--out", model_dir, "--verbose", "0"]) == 0
        metrics = json.loads(tf.io.gfile.GFile(f"{model_dir}/metrics.json").read())
        assert tf.io.gfile.exists(f"{model_dir}/model.keras") and metrics["num_examples"] == 6
        steps.append("finetune")

        # 2. evaluate the model directory
        capsys.readouterr()
        assert main(["evaluate", model_dir, "--input", files["dev"], "--verbose", "0"]) == 0
        assert json.loads(capsys.readouterr().out)["accuracy"] == pytest.approx(metrics["accuracy"])
        steps.append("evaluate")

        # 3. export a SavedModel with TFLite inside, as a TF Serving version directory
        export_dir = f"{root}/export/sst/1"
        assert main(["export", model_dir, "--out", export_dir, "--tflite"]) == 0
        names = tf.io.gfile.listdir(export_dir)
        assert {"saved_model.pb", "model.tflite"} <= set(names)
        assert tf.io.gfile.exists(f"{export_dir}/assets.extra/tf_serving_warmup_requests")
        assert tf.io.gfile.listdir(f"{root}/export/sst") == ["1"]  # no temporary directory left
        steps.append("export")

        # 4-5. predict through the SavedModel and through the TFLite file: the same labels
        capsys.readouterr()
        texts = ["a good cat", "a bad dog"]
        assert main(["predict", export_dir, *texts]) == 0
        saved = _json_lines(capsys.readouterr().out)
        assert len(saved) == 2 and all(row["label"] in ("0", "1") for row in saved)
        steps.append("predict SavedModel")
        assert main(["predict", f"{export_dir}/model.tflite", *texts]) == 0
        lite = _json_lines(capsys.readouterr().out)
        assert [row["label"] for row in lite] == [row["label"] for row in saved]
        steps.append("predict TFLite")

        # 6. pretraining data from a ram:// glob
        data_dir = f"{root}/pretraining/data"
        assert main(["create-pretraining-data", "--input", f"{root}/in/corpus/*.txt", "--vocab", files["vocab"],
                     "--out", data_dir, "--sequence-length", "16", "--dupe-factor", "3",
                     "--masking", "dynamic"]) == 0
        metadata = json.loads(tf.io.gfile.GFile(f"{data_dir}/pretraining_data.json").read())
        assert metadata["num_instances"] > 0 and tf.io.gfile.exists(f"{data_dir}/vocab.txt")
        assert not tf.io.gfile.exists(f"{data_dir}/.shuffle-buckets")
        steps.append("create-pretraining-data")

        # 7. pretrain, interrupted after step 3 of 4 (the checkpoint of step 2 is kept)
        run_dir = f"{root}/pretraining/run"
        model_config = f"{root}/in/model.json"
        with tf.io.gfile.GFile(model_config, "w") as f:
            f.write(json.dumps({"hidden_size": 16, "num_hidden_layers": 1, "num_attention_heads": 2,
                                "intermediate_size": 32, "max_position_embeddings": 16}))
        command = ["pretrain", "--train", data_dir, "--config", model_config, "--steps", "4",
                   "--batch-size", "4", "--save-every-steps", "2", "--out", run_dir, "--verbose", "0"]
        import kbert.training.time_callbacks as callbacks_module  # pretrain() imports StepClock from here

        clock = callbacks_module.StepClock

        class InterruptAtStep3(clock):
            def on_train_batch_end(self, batch, logs=None):
                super().on_train_batch_end(batch, logs)
                if int(self.model.optimizer.iterations) >= 3:
                    raise _Interrupted("simulated kill at step 3")

        monkeypatch.setattr(callbacks_module, "StepClock", InterruptAtStep3)
        with pytest.raises(_Interrupted):
            main(command)
        monkeypatch.setattr(callbacks_module, "StepClock", clock)
        assert tf.io.gfile.exists(f"{run_dir}/backup/training_metadata.json")
        assert tf.io.gfile.exists(f"{run_dir}/checkpoints/ckpt-2.weights.h5")
        assert not tf.io.gfile.exists(f"{run_dir}/history.json")
        steps.append("pretrain (interrupted)")

        # 8. the same command resumes from the step-2 checkpoint and finishes at step 4
        capsys.readouterr()
        assert main(command) == 0
        assert f"Resuming {run_dir} from step 2" in capsys.readouterr().out
        history = json.loads(tf.io.gfile.GFile(f"{run_dir}/history.json").read())
        assert history["steps"] == 4
        assert tf.io.gfile.exists(f"{run_dir}/checkpoints/ckpt-4.weights.h5")
        assert tf.io.gfile.glob(f"{run_dir}/logs/*")  # TensorBoard event files on ram:// too
        steps.append("pretrain (resumed)")

        # 9. load the pretrained encoder and its tokenizer back from ram://
        encoder = kbert.load_pretrained(run_dir)
        tokenizer = kbert.load_tokenizer(run_dir)
        assert encoder.bert_config.hidden_size == 16 and tokenizer.vocabulary_size() == len(TINY_VOCAB)
        steps.append("load")
    finally:
        watched, _watch = _watch, None

    assert steps == ["finetune", "evaluate", "export", "predict SavedModel", "predict TFLite",
                     "create-pretraining-data", "pretrain (interrupted)", "pretrain (resumed)", "load"]
    unexpected = [f"{event} {path} (from {writer})" for event, path, writer, _ in watched["unexpected"]]
    assert not unexpected, "written to the local disk:\n" + "\n".join(unexpected)
    assert sorted(os.listdir(workdir)) == []
    left = [name for name in os.listdir(local_tmp) if not name.startswith("__autograph_generated_file")]
    assert left == [], f"left in the temporary directory: {left}"
    # A missing ram:// file is named in the error.
    with pytest.raises(FileNotFoundError, match=f"{root}/nope"):
        kbert.load_tokenizer(f"{root}/nope")
