"""SentencePooling against sentence-transformers' own Pooling and Normalize modules (PyTorch), mode by mode."""

import keras
import numpy as np
import pytest

from kbert.constants import POOLING_MODES
from kbert.layers.sentence_pooling import SentencePooling
from layer_checks import run_standard_checks


def batch(seed: int = 0):
    """Token vectors far from zero mean (a max or a mean over padding would show) and rows of 1-6 real tokens."""
    rng = np.random.default_rng(seed)
    tokens = rng.normal(size=(4, 6, 5)).astype("float32") * 3 - 1
    lengths = np.array([6, 1, 3, 4])
    mask = (np.arange(6)[None, :] < lengths[:, None]).astype("int32")
    return tokens, mask


def sentence_transformers_pooling(mode: str, tokens: np.ndarray, mask: np.ndarray, normalize: bool) -> np.ndarray:
    torch = pytest.importorskip("torch")
    modules = pytest.importorskip("sentence_transformers.sentence_transformer.modules")
    from sentence_transformers.base.modules import Normalize

    features = {"token_embeddings": torch.tensor(tokens), "attention_mask": torch.tensor(mask, dtype=torch.int64)}
    features = modules.Pooling(tokens.shape[-1], pooling_mode=mode)(features)
    if normalize:
        features = Normalize()(features)
    return features["sentence_embedding"].numpy()


@pytest.mark.parametrize("mode", POOLING_MODES)
def test_each_mode_equals_sentence_transformers(mode):
    tokens, mask = batch()
    pooled = SentencePooling(mode)(tokens, mask).numpy()
    np.testing.assert_allclose(pooled, sentence_transformers_pooling(mode, tokens, mask, False), atol=1e-6)
    # Normalize: Keras' UnitNormalization divides by max(norm, 1e-12), as torch's F.normalize does.
    normalized = keras.layers.UnitNormalization()(pooled).numpy()
    np.testing.assert_allclose(normalized, sentence_transformers_pooling(mode, tokens, mask, True), atol=1e-6)


def test_padding_changes_nothing_and_by_hand():
    tokens, mask = batch()
    for mode in POOLING_MODES:
        wider = np.concatenate([tokens, np.full((4, 3, 5), 50.0, "float32")], axis=1)
        wider_mask = np.concatenate([mask, np.zeros((4, 3), "int32")], axis=1)
        np.testing.assert_allclose(SentencePooling(mode)(wider, wider_mask), SentencePooling(mode)(tokens, mask),
                                   atol=1e-6)
    row = tokens[2, :3]  # three real tokens
    np.testing.assert_allclose(SentencePooling("mean_sqrt_len_tokens")(tokens, mask)[2], row.sum(0) / np.sqrt(3),
                               atol=1e-5)
    np.testing.assert_allclose(SentencePooling("cls")(tokens, mask)[2], row[0])


def test_bfloat16_tokens_pool_in_float32():
    tokens, mask = batch()
    pooled = SentencePooling("mean")(keras.ops.cast(tokens, "bfloat16"), mask)
    assert pooled.dtype == "float32"


def test_an_unknown_mode_is_an_error_naming_the_modes():
    with pytest.raises(ValueError, match="'weightedmean' is not one of .*mean_sqrt_len_tokens"):
        SentencePooling("weightedmean")


@pytest.mark.parametrize("mode", ["max", "mean_sqrt_len_tokens"])
def test_standard_checks(mode):
    tokens, mask = batch()
    run_standard_checks(SentencePooling(mode), tokens, call_kwargs={"padding_mask": mask})
