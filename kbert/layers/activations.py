"""The feed-forward activations a BERT config may name (Google's and Hugging Face's names), as Keras ones."""

from __future__ import annotations

from collections.abc import Callable

import keras

from kbert.config import check_hidden_act


@keras.saving.register_keras_serializable(package="kbert")
def gelu_approximate(x):
    """GELU's tanh approximation, `0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3)))`.

    Hugging Face's `gelu_new`, `gelu_pytorch_tanh` and `gelu_fast`; Keras names no activation for it
    (`keras.activations.gelu` takes `approximate=` as an argument), hence this function.

    Args:
        x: float tensor.

    Returns:
        A tensor of the same shape.

    Example:
    >>> round(float(gelu_approximate(keras.ops.convert_to_tensor(1.0))), 4)
    0.8412
    """
    return keras.activations.gelu(x, approximate=True)


# Each of `kbert.config.HIDDEN_ACTS` as a Keras function. BERT's "gelu" is the exact, erf-based GELU, which
# `keras.activations.gelu` computes by default; keras-hub's BertBackbone and `keras.ops.gelu` default to the
# tanh approximation, 4e-3 away from BERT's outputs.
HIDDEN_ACTIVATIONS: dict[str, Callable] = {
    "gelu": keras.activations.gelu,
    "gelu_new": gelu_approximate,
    "gelu_pytorch_tanh": gelu_approximate,
    "gelu_fast": gelu_approximate,
    "gelu_approximate": gelu_approximate,
    "relu": keras.activations.relu,
    "tanh": keras.activations.tanh,
}


def hidden_activation(name: str) -> Callable:
    """The Keras activation for a config's `hidden_act`.

    Args:
        name: str. One of `kbert.config.HIDDEN_ACTS`: "gelu" (exact), "gelu_new", "gelu_pytorch_tanh",
            "gelu_fast", "gelu_approximate" (the tanh approximation), "relu", "tanh".

    Returns:
        The activation function.

    Example:
    >>> hidden_activation("gelu_new") is gelu_approximate
    True
    """
    return HIDDEN_ACTIVATIONS[check_hidden_act(name)]
