"""The activations a BERT config may name: each one by hand, and through a layer's config and `.keras` file."""

import math

import keras
import numpy as np
import pytest

from kbert.layers.activations import HIDDEN_ACTIVATIONS, gelu_approximate, hidden_activation
from layer_checks import run_standard_checks

X = np.linspace(-4.0, 4.0, 17).astype("float32")
EXACT_GELU = np.array([0.5 * x * (1.0 + math.erf(x / math.sqrt(2.0))) for x in X.tolist()])
TANH_GELU = 0.5 * X * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (X + 0.044715 * X**3)))
BY_HAND = {"gelu": EXACT_GELU, "gelu_new": TANH_GELU, "gelu_pytorch_tanh": TANH_GELU, "gelu_fast": TANH_GELU,
           "gelu_approximate": TANH_GELU, "relu": np.maximum(X, 0.0), "tanh": np.tanh(X)}


@pytest.mark.parametrize("name", sorted(HIDDEN_ACTIVATIONS))
def test_each_name_by_hand(name):
    np.testing.assert_allclose(hidden_activation(name)(X), BY_HAND[name], atol=1e-6)


@pytest.mark.parametrize("name", sorted(HIDDEN_ACTIVATIONS))
def test_a_layer_using_it_passes_the_standard_checks(name):
    """The activation survives `get_config`/`from_config` and a `.keras` file (kbert's by its registered name)."""
    layer = keras.layers.Dense(4, activation=hidden_activation(name))
    inputs = np.random.default_rng(0).normal(size=(3, 5)).astype("float32")
    run_standard_checks(layer, inputs, fit_targets=np.ones((3, 4), "float32"))
    if hidden_activation(name) is gelu_approximate:  # no Keras name: saved under its registered one
        assert layer.get_config()["activation"]["config"] == "kbert>gelu_approximate"


def test_unknown_name_is_refused_with_the_known_ones():
    with pytest.raises(ValueError, match="Unsupported hidden_act 'swish'.*gelu_new"):
        hidden_activation("swish")


def test_every_name_a_config_may_give_has_its_function():
    from kbert.config import HIDDEN_ACTS

    assert tuple(HIDDEN_ACTIVATIONS) == HIDDEN_ACTS
