"""`kbert.save_model` writes the weights without the optimizer's state, in one rename, and reloads them."""

import zipfile

import h5py
import numpy as np

import kbert
from tests.conftest import TINY_VOCAB


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
