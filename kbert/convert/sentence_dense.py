"""sentence-transformers' `Dense` module: a linear map with an activation on the sentence vector, read and
written without TensorFlow.

    DIR/2_Dense/config.json          in_features, out_features, bias, activation_function (a torch.nn class,
                                     "torch.nn.modules.activation.Tanh" by default)
    DIR/2_Dense/model.safetensors    linear.weight (out_features, in_features), linear.bias (out_features,);
                                     or pytorch_model.bin (sentence-transformers before 3 and
                                     `safe_serialization=False`)

kbert builds it as a `keras.layers.Dense(units, use_bias, activation)` whose kernel is `linear.weight`
transposed. A residual connection (`use_residual`), an activation kbert has no exact Keras twin for, or a
module reading or writing other features than the sentence embedding is an error naming it.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import safetensors.numpy

import kbert.file_io as file_io
from kbert.convert.readers import read_state_dict

# torch.nn activation classes (the last part of sentence-transformers' `activation_function`) -> Keras names.
# torch's GELU is the exact (erf) one, as Keras' "gelu" is by default.
ACTIVATIONS = {"Tanh": "tanh", "Identity": "linear", "ReLU": "relu", "Sigmoid": "sigmoid", "GELU": "gelu"}
TORCH_ACTIVATIONS = {"tanh": "torch.nn.modules.activation.Tanh", "linear": "torch.nn.modules.linear.Identity",
                     "relu": "torch.nn.modules.activation.ReLU", "sigmoid": "torch.nn.modules.activation.Sigmoid",
                     "gelu": "torch.nn.modules.activation.GELU"}


@dataclasses.dataclass(frozen=True)
class SentenceDense:
    """One `Dense` module of a sentence-transformers directory, as kbert rebuilds it.

    Args:
        units: int. `out_features`, the width of the vector it makes.
        use_bias: bool. `bias`: the linear map adds a bias.
        activation: str. The Keras name of the activation: one of `ACTIVATIONS`' values ("tanh" by default,
            as sentence-transformers' own default; "linear" for `torch.nn.Identity`).
        path: str. Its folder, relative to the directory (e.g. "2_Dense").

    Example:
    >>> SentenceDense(8, activation="linear").layer_config()
    {'units': 8, 'use_bias': True, 'activation': 'linear'}
    """

    units: int
    use_bias: bool = True
    activation: str = "tanh"
    path: str = ""

    def layer_config(self) -> dict[str, Any]:
        """The `keras.layers.Dense` arguments (`kbert.tasks.BertSentenceEmbedder`'s `dense` entries)."""
        return {"units": self.units, "use_bias": self.use_bias, "activation": self.activation}


def read_dense(directory: str, path: str, in_features: int | None = None) -> SentenceDense:
    """Reads the Dense module in `directory`/`path` (its config.json).

    Args:
        directory: the sentence-transformers directory.
        path: the module's folder in it.
        in_features: int or None. The width of the vector it is given, when the modules before say it.

    Raises:
        ValueError: a setting kbert does not reproduce (named in the message).
    """
    config_file = file_io.join(directory, path, "config.json")
    if not file_io.isfile(config_file):
        raise FileNotFoundError(f"{config_file}: the Dense module's config is missing")
    config = file_io.read_json(config_file)
    for key in ("module_input_name", "module_output_name"):
        if config.get(key) not in (None, "sentence_embedding"):
            raise ValueError(f"{config_file}: {key} {config[key]!r}; kbert applies Dense to the sentence "
                             f"embedding only")
    if config.get("use_residual"):
        raise ValueError(f"{config_file}: use_residual true; kbert does not build the Dense module's residual "
                         f"connection")
    activation = str(config.get("activation_function", "torch.nn.modules.activation.Tanh"))
    name = activation.rsplit(".", 1)[-1]
    if not activation.startswith("torch.nn.") or name not in ACTIVATIONS:
        raise ValueError(f"{config_file}: activation_function {activation!r}; kbert reproduces torch.nn's "
                         f"{sorted(ACTIVATIONS)}")
    if in_features is not None and int(config["in_features"]) != in_features:
        raise ValueError(f"{config_file}: in_features {config['in_features']} but the modules before it give "
                         f"vectors of {in_features}")
    return SentenceDense(int(config["out_features"]), bool(config.get("bias", True)), ACTIVATIONS[name], path)


def read_dense_weights(directory: str, dense: SentenceDense) -> list[np.ndarray]:
    """The module's weights in Keras' order: [kernel (in, out)] and, with a bias, [bias (out,)]."""
    folder = file_io.join(directory, dense.path)
    tensors = read_state_dict(folder)
    names = ["linear.weight"] + (["linear.bias"] if dense.use_bias else [])
    missing = [name for name in names if name not in tensors]
    if missing:
        raise ValueError(f"{folder}: no tensor {missing} among {sorted(tensors)}")
    weights = [np.ascontiguousarray(tensors["linear.weight"].T)] + [tensors[n] for n in names[1:]]
    if weights[0].shape[1] != dense.units:
        raise ValueError(f"{folder}: linear.weight is {tensors['linear.weight'].shape}, not {dense.units} rows")
    return [np.asarray(w, np.float32) for w in weights]


def write_dense(directory: str, dense: SentenceDense, weights: list[np.ndarray]) -> None:
    """Writes the module's config.json and model.safetensors (sentence-transformers' layout) into
    `directory`/`dense.path`, from Keras' [kernel (in, out)[, bias]]."""
    folder = file_io.join(directory, dense.path)
    file_io.makedirs(folder)
    kernel = np.asarray(weights[0], np.float32)
    config = {"in_features": int(kernel.shape[0]), "out_features": int(kernel.shape[1]), "bias": dense.use_bias,
              "activation_function": TORCH_ACTIVATIONS[dense.activation]}
    file_io.write_json(file_io.join(folder, "config.json"), config)
    tensors = {"linear.weight": np.ascontiguousarray(kernel.T)}
    if dense.use_bias:
        tensors["linear.bias"] = np.asarray(weights[1], np.float32)
    file_io.write_bytes(file_io.join(folder, "model.safetensors"),
                        safetensors.numpy.save(tensors, metadata={"format": "pt"}))
