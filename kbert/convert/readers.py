"""Reading checkpoint directories of the BERT family into (config, {google_name: array}), whatever their format.

Formats are told apart by their config file:

    kbert_config.json + kbert_weights.safetensors        kbert (Google's tensor names, safetensors)
    bert_config.json  + bert_model.ckpt.{index,data-*}   Google's original release
    config.json       + model.safetensors                Hugging Face (or pytorch_model.bin)

The config's `model_type` names the family (BERT, ALBERT or RoBERTa; BERT for Google's files, which have
none) and picks the config class (`kbert.config.config_from_dict`). Hugging Face names are mapped onto the
family's Google names (`kbert.convert.names`), so every reader returns the same dict; `kbert.convert.checkpoints`
fills the family's encoder from it. Nothing here builds a model.

Example:
>>> config, tensors = read_checkpoint("/path/to/all-MiniLM-L6-v2")  # doctest: +SKIP
>>> tensors["bert/embeddings/word_embeddings"].shape  # doctest: +SKIP
(30522, 384)
"""

from __future__ import annotations

import io
import os
import zipfile

import numpy as np
import safetensors.numpy

import kbert.file_io as file_io
from kbert.config import BertConfig, config_from_json_file
from kbert.convert import names

KBERT_CONFIG = "kbert_config.json"
KBERT_WEIGHTS = "kbert_weights.safetensors"


class CheckpointError(ValueError):
    """A checkpoint that does not fit the model: a missing, extra, mis-shaped or unreadable tensor."""


def detect_format(path: str | os.PathLike) -> str:
    """Returns "kbert", "google" or "hf" for a checkpoint directory."""
    path = file_io.fspath(path)
    if not file_io.isdir(path):
        raise FileNotFoundError(f"Checkpoint directory not found: {path}")
    if file_io.isfile(file_io.join(path, KBERT_CONFIG)):
        return "kbert"
    if file_io.isfile(file_io.join(path, "bert_config.json")):
        return "google"
    if file_io.isfile(file_io.join(path, "config.json")):
        return "hf"
    if file_io.isfile(file_io.join(path, "albert_config.json")):
        raise CheckpointError(f"{path} is a Google ALBERT checkpoint (albert_config.json): kbert reads ALBERT from "
                              "Hugging Face directories (config.json) and its own, not from Google's TF1 files yet")
    raise CheckpointError(
        f"{path} holds no BERT config: expected {KBERT_CONFIG} (kbert), bert_config.json (Google) "
        "or config.json (Hugging Face)"
    )


CONFIG_FILES = {"kbert": KBERT_CONFIG, "google": "bert_config.json", "hf": "config.json"}


def read_config(path: str | os.PathLike) -> BertConfig:
    """The config of any supported checkpoint directory (`BertConfig`, or its family's subclass), without reading
    its weights."""
    return config_from_json_file(file_io.join(path, CONFIG_FILES[detect_format(path)]))


def read_checkpoint(path: str | os.PathLike) -> tuple[BertConfig, dict[str, np.ndarray]]:
    """Reads any supported checkpoint directory into its config and `{google_name: array}` (the family's names)."""
    path = file_io.fspath(path)
    fmt = detect_format(path)
    config = read_config(path)  # first: a broken config is named before missing weights
    if fmt == "kbert":
        return config, _read_safetensors(file_io.join(path, KBERT_WEIGHTS))
    if fmt == "google":
        return config, _read_google(path)
    return config, _read_hf(path, config.model_type)


def _read_safetensors(file: str) -> dict[str, np.ndarray]:
    if not file_io.isfile(file):
        raise FileNotFoundError(f"Weights file not found: {file}")
    try:
        return dict(safetensors.numpy.load(file_io.read_bytes(file)))
    except Exception as e:  # safetensors raises its own error types for truncated or garbled files
        raise CheckpointError(f"Cannot read {file}: {e}") from e


def _read_google(path: str) -> dict[str, np.ndarray]:
    import tensorflow as tf

    indexes = file_io.glob(file_io.join(path, "*.ckpt*.index"))
    if not indexes:
        raise FileNotFoundError(f"No TF checkpoint (*.ckpt.index) in {path}")
    prefix = indexes[-1].removesuffix(".index")
    try:
        reader = tf.train.load_checkpoint(prefix)
        shapes = reader.get_variable_to_shape_map()
        return {
            name: reader.get_tensor(name)
            for name in shapes
            if not names.is_training_state(name)
        }
    except (tf.errors.OpError, ValueError) as e:
        raise CheckpointError(f"Cannot read TF checkpoint {prefix}: {e}") from e


def _read_hf(path: str, model_type: str) -> dict[str, np.ndarray]:
    files = file_io.glob(file_io.join(path, "model*.safetensors"))
    if files:
        raw = {}
        for file in files:  # sharded checkpoints: model-00001-of-0000N.safetensors
            raw.update(_read_safetensors(file))
    elif file_io.isfile(file_io.join(path, "pytorch_model.bin")):
        raw = _read_torch_bin(file_io.join(path, "pytorch_model.bin"))
    else:
        raise FileNotFoundError(f"No model.safetensors or pytorch_model.bin in {path}")
    tensors = {}
    for hf_name, array in raw.items():
        mapped = names.hf_to_google(hf_name, model_type)
        if mapped is None:
            continue
        name, transpose = mapped
        if name in tensors:
            raise CheckpointError(f"{path}: tensor {hf_name} maps onto {name} twice")
        tensors[name] = np.ascontiguousarray(array.T) if transpose else array
    return tensors


def _read_torch_bin(file: str) -> dict[str, np.ndarray]:
    """Reads pytorch_model.bin with torch's `weights_only` loader, which refuses to run pickled code."""
    try:
        import torch
    except ImportError:
        raise CheckpointError(
            f"{file} is a pickled PyTorch file. kbert reads it only through torch.load(weights_only=True), "
            "which needs torch installed; or convert it to model.safetensors."
        ) from None
    data = io.BytesIO(file_io.read_bytes(file))  # torch.load reads a file object: no local copy needed
    if not zipfile.is_zipfile(data):
        raise CheckpointError(f"{file} is not a PyTorch zip archive (legacy or corrupt file)")
    data.seek(0)
    try:
        state = torch.load(data, map_location="cpu", weights_only=True)
    except Exception as e:
        raise CheckpointError(f"Refusing or unable to load {file} safely: {e}") from e
    return {k: v.float().numpy() if v.dtype == torch.bfloat16 else v.numpy() for k, v in state.items()}

