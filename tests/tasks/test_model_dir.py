"""`kbert.save_model` writes the weights without the optimizer's state, in one rename; `load_model` reloads them."""

import json
import os
import pathlib
import subprocess
import sys
import zipfile

import h5py
import numpy as np
import pytest

import kbert
from tests.conftest import TINY_VOCAB

ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_saved_model_has_weights_but_no_optimizer_state(tmp_path):
    encoder = kbert.BertEncoder(vocab_size=len(TINY_VOCAB), hidden_size=16, num_hidden_layers=1,
                                num_attention_heads=2, intermediate_size=32, max_position_embeddings=16)
    model = kbert.BertClassifier(encoder, 2)
    model.compile()
    ids = np.array([[2, 5, 6, 7, 3], [2, 10, 11, 3, 0]], np.int32)
    x = {"token_ids": ids, "segment_ids": np.zeros_like(ids), "padding_mask": ids != 0}
    model.train_on_batch(x, np.array([0, 1], np.int32))
    optimizer = model.optimizer

    kbert.save_model(model, tmp_path, kbert.BertTokenizer(TINY_VOCAB), labels=["neg", "pos"], sequence_length=8)

    assert sorted(p.name for p in tmp_path.glob("model*")) == ["model.keras"]  # no partial file left
    with zipfile.ZipFile(tmp_path / "model.keras") as archive, archive.open("model.weights.h5") as weights:
        groups: list[str] = []
        h5py.File(weights, "r").visit(groups.append)
    assert not any(g.startswith("optimizer") for g in groups)
    assert any(g.startswith("layers") for g in groups)
    # The model in memory keeps its optimizer (training can go on); the reload gives the same outputs.
    assert model.optimizer is optimizer and int(optimizer.iterations) == 1
    restored = kbert.load_model(tmp_path)
    np.testing.assert_allclose(restored(x, training=False), model(x, training=False), atol=1e-6)
    model.train_on_batch(x, np.array([0, 1], np.int32))
    assert int(optimizer.iterations) == 2


@pytest.mark.slow
def test_a_model_directory_written_before_the_heads_moved_loads_in_a_new_process(tmp_path):
    """model.keras files of earlier releases name the head's old module (kbert.models.bert_classifier);
    Keras finds the class by its registered name, which `load_model` registers by importing the task named
    in task.json before it reads the file. A fresh process has imported nothing else."""
    encoder = kbert.BertEncoder(vocab_size=len(TINY_VOCAB), hidden_size=16, num_hidden_layers=1,
                                num_attention_heads=2, intermediate_size=32, max_position_embeddings=16)
    kbert.save_model(kbert.BertClassifier(encoder, 2), tmp_path, kbert.BertTokenizer(TINY_VOCAB),
                     labels=["neg", "pos"], sequence_length=8)
    path = tmp_path / "model.keras"
    with zipfile.ZipFile(path) as archive:
        entries = {name: archive.read(name) for name in archive.namelist()}
    config = json.loads(entries["config.json"])
    assert (config["module"], config["registered_name"]) == ("kbert.tasks.classification_model", "kbert>BertClassifier")
    config["module"] = "kbert.models.bert_classifier"
    entries["config.json"] = json.dumps(config).encode()
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in entries.items():
            archive.writestr(name, data)

    code = "import sys, kbert; m = kbert.load_model(sys.argv[1]); print(type(m).__module__, m.output.shape)"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, cwd=ROOT,
                          env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip().splitlines()[-1] == "kbert.tasks.classification_model (None, 2)"
