"""BertEmbeddings: the standard checks, and its sum and LayerNorm against numpy by hand."""

import numpy as np
import pytest

import kbert
from layer_checks import run_standard_checks

VOCAB, HIDDEN, POSITIONS = 20, 8, 16
TOKEN_IDS = np.array([[2, 5, 6, 3, 0, 0], [2, 7, 3, 9, 10, 3]], "int32")
SEGMENT_IDS = np.array([[0, 0, 0, 0, 0, 0], [0, 0, 0, 1, 1, 1]], "int32")


def embeddings(**overrides):
    settings = dict(vocab_size=VOCAB, hidden_size=HIDDEN, max_position_embeddings=POSITIONS, dropout=0.0)
    settings.update(overrides)
    return kbert.BertEmbeddings(**settings)


def test_standard_checks():
    layer = embeddings(dropout=0.1)
    run_standard_checks(layer, TOKEN_IDS, call_kwargs={"segment_ids": SEGMENT_IDS},
                        fit_targets=np.zeros(TOKEN_IDS.shape + (HIDDEN,), "float32"))


def test_sum_of_three_tables_then_layer_norm_by_hand():
    layer = embeddings(layer_norm_eps=1e-3)
    layer(TOKEN_IDS, SEGMENT_IDS)
    rng = np.random.default_rng(0)
    tokens, positions, segments = (rng.normal(size=(n, HIDDEN)).astype("float32") for n in (VOCAB, POSITIONS, 2))
    gamma, beta = rng.normal(1.0, 0.2, HIDDEN).astype("float32"), rng.normal(0.0, 0.2, HIDDEN).astype("float32")
    layer.token_embedding.embeddings.assign(tokens)
    layer.position_embedding.position_embeddings.assign(positions)
    layer.segment_embedding.embeddings.assign(segments)
    layer.layer_norm.gamma.assign(gamma)
    layer.layer_norm.beta.assign(beta)

    seq = TOKEN_IDS.shape[1]
    summed = tokens[TOKEN_IDS] + positions[:seq][None] + segments[SEGMENT_IDS]
    mean, variance = summed.mean(-1, keepdims=True), summed.var(-1, keepdims=True)
    expected = (summed - mean) / np.sqrt(variance + 1e-3) * gamma + beta
    np.testing.assert_allclose(layer(TOKEN_IDS, SEGMENT_IDS), expected, atol=1e-5)
    # Dropout acts in training only, and keeps the expected value: inference is the deterministic sum.
    dropped = embeddings(dropout=0.5, layer_norm_eps=1e-3)
    dropped(TOKEN_IDS, SEGMENT_IDS)
    dropped.set_weights(layer.get_weights())
    np.testing.assert_array_equal(dropped(TOKEN_IDS, SEGMENT_IDS, training=False), layer(TOKEN_IDS, SEGMENT_IDS))
    assert np.mean(np.asarray(dropped(TOKEN_IDS, SEGMENT_IDS, training=True)) == 0.0) == pytest.approx(0.5, abs=0.2)


def test_sublayer_names_are_stable():
    """Checkpoint converters address the tables by these names."""
    layer = embeddings()
    layer(TOKEN_IDS, SEGMENT_IDS)
    assert sorted(w.path.split("/", 1)[1] for w in layer.weights) == [
        "layer_norm/beta", "layer_norm/gamma", "position_embedding/embeddings",
        "segment_embedding/embeddings", "token_embedding/embeddings"]
