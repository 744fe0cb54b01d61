"""all-MiniLM-L6-v2 as sentence-transformers encodes it: kbert's sentence model, its export (SavedModel and
TFLite) and `kbert predict`, on held-out sentences (one longer than its 256 tokens), and the same checkpoint
under the other pooling modes."""

import json
import os

import numpy as np
import pytest

from kbert.cli.main import main
from kbert.constants import POOLING_MODES
from kbert.tasks.embedding import load_sentence_encoder

pytestmark = pytest.mark.slow

SENTENCES = [
    "A heron stood motionless in the shallow water at dawn.",
    "The committee postponed its vote until the auditors reported.",
    "Zürich's café owners raised prices after the long winter!",
    "is this the train to the airport or the harbour?",
    "",
    " ".join(["the old lighthouse keeper wrote down every ship that passed the rocks"] * 30),  # > 256 tokens
]


@pytest.fixture(scope="module")
def reference(minilm):
    st = pytest.importorskip("sentence_transformers")
    return st.SentenceTransformer(str(minilm), device="cpu").encode(SENTENCES)


def test_the_sentence_model_encodes_as_sentence_transformers(minilm, reference):
    model = load_sentence_encoder(minilm)
    assert (model.task.pooling, model.task.normalize, model.preprocessor.sequence_length) == ("mean", True, 256)
    ours = model.predict_on_batch(model.preprocessor(SENTENCES))
    np.testing.assert_allclose(ours, reference, atol=1e-5)


def test_export_tflite_and_predict_equal_sentence_transformers(minilm, reference, tmp_path, capsys):
    out = tmp_path / "minilm" / "1"
    assert main(["export", str(minilm), "--out", str(out), "--tflite"]) == 0
    config = json.loads((out / "assets" / "kbert_export.json").read_text())
    assert (config["task"], config["sequence_length"]) == ("embed", 256)
    for target in (out, out / "model.tflite"):
        capsys.readouterr()
        assert main(["predict", str(target), *SENTENCES]) == 0
        answers = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
        np.testing.assert_allclose([a["embedding"] for a in answers], reference, atol=1e-5, err_msg=str(target))


@pytest.mark.parametrize("mode", [m for m in POOLING_MODES if m != "mean"])
def test_other_pooling_modes_without_normalize(minilm, mode, tmp_path):
    """The checkpoint's weights under another Pooling config and no Normalize module, read by both."""
    st = pytest.importorskip("sentence_transformers")
    for name in os.listdir(minilm):
        if os.path.isfile(minilm / name) and name != "modules.json":
            os.symlink(minilm / name, tmp_path / name)
    modules = json.loads((minilm / "modules.json").read_text())[:2]
    (tmp_path / "modules.json").write_text(json.dumps(modules))
    (tmp_path / "1_Pooling").mkdir()
    (tmp_path / "1_Pooling" / "config.json").write_text(json.dumps({"embedding_dimension": 384,
                                                                    "pooling_mode": mode}))
    want = st.SentenceTransformer(str(tmp_path), device="cpu").encode(SENTENCES)
    model = load_sentence_encoder(tmp_path)
    assert (model.task.pooling, model.task.normalize) == (mode, False)
    got = model.predict_on_batch(model.preprocessor(SENTENCES))
    np.testing.assert_allclose(got, want, atol=1e-5 * max(1.0, float(np.abs(want).max())))
    assert np.abs(np.linalg.norm(want, axis=-1) - 1).max() > 0.1  # not normalised
