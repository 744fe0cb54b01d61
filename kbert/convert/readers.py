"""Reading checkpoint directories of the BERT family into (config, {google_name: array}), whatever their format.

Formats are told apart by their config file:

    kbert_config.json  + kbert_weights.safetensors        kbert (Google's tensor names, safetensors)
    bert_config.json   + bert_model.ckpt.{index,data-*}   Google's BERT release
    albert_config.json + model.ckpt-*.{index,data-*}      Google's ALBERT release
    config.json        + model.safetensors                Hugging Face (or pytorch_model.bin)

The config's `model_type` names the family (BERT, ALBERT or RoBERTa) and picks the config class
(`kbert.config.config_from_dict`); Google's files have none, and their config file's name says the family
(`kbert.convert.google_tf1`). Hugging Face names are mapped onto the family's Google names (`kbert.convert.names`),
so every reader returns the same dict; `kbert.convert.checkpoints` fills the family's encoder from it. Nothing
here builds a model.

Example:
>>> config, tensors = read_checkpoint("/path/to/all-MiniLM-L6-v2")  # doctest: +SKIP
>>> tensors["bert/embeddings/word_embeddings"].shape  # doctest: +SKIP
(30522, 384)
"""

from __future__ import annotations

import io
import os
import re
import zipfile

import numpy as np
import safetensors.numpy

import kbert.file_io as file_io
from kbert.file_io.model_source import resolve_model
from kbert.config import BertConfig, config_from_json_file
from kbert.convert import google_tf1, names

KBERT_CONFIG = "kbert_config.json"
KBERT_WEIGHTS = "kbert_weights.safetensors"
# A checkpoint's vocabulary: WordPiece's vocab.txt, or a SentencePiece model (Hugging Face's and Google's ALBERT
# names).
VOCABULARY_FILES = ("vocab.txt", "spiece.model", "30k-clean.model")


class CheckpointError(ValueError):
    """A checkpoint that does not fit the model: a missing, extra, mis-shaped or unreadable tensor."""


def detect_format(path: str | os.PathLike) -> str:
    """Returns "kbert", "google" (Google's BERT or ALBERT release) or "hf" for a checkpoint directory (or a model
    name, `kbert.file_io.model_source`)."""
    path = resolve_model(path)
    if not file_io.isdir(path):
        raise FileNotFoundError(f"Checkpoint directory not found: {path}")
    if file_io.isfile(file_io.join(path, KBERT_CONFIG)):
        return "kbert"
    try:
        if google_tf1.config_file(path):
            return "google"
    except ValueError as e:
        raise CheckpointError(str(e)) from e
    if file_io.isfile(file_io.join(path, "config.json")):
        return "hf"
    raise CheckpointError(
        f"{path} holds no BERT config: expected {KBERT_CONFIG} (kbert), bert_config.json or "
        "albert_config.json (Google's BERT or ALBERT) or config.json (Hugging Face)"
    )


def vocabulary_file(path: str | os.PathLike) -> str | None:
    """The vocabulary file of a checkpoint directory (the first of `VOCABULARY_FILES` there), or None."""
    path = resolve_model(path)
    files = (file_io.join(path, name) for name in VOCABULARY_FILES)
    return next((file for file in files if file_io.isfile(file)), None)


def read_config(path: str | os.PathLike) -> BertConfig:
    """The config of any supported checkpoint directory (`BertConfig`, or its family's subclass), without reading
    its weights."""
    path = resolve_model(path)
    fmt = detect_format(path)
    if fmt == "google":
        return google_tf1.read_config(path)
    return config_from_json_file(file_io.join(path, KBERT_CONFIG if fmt == "kbert" else "config.json"))


def read_checkpoint(path: str | os.PathLike) -> tuple[BertConfig, dict[str, np.ndarray]]:
    """Reads any supported checkpoint directory into its config and `{google_name: array}` (the family's names)."""
    path = resolve_model(path)
    fmt = detect_format(path)
    config = read_config(path)  # first: a broken config is named before missing weights
    if fmt == "kbert":
        return config, _read_safetensors(file_io.join(path, KBERT_WEIGHTS))
    if fmt == "google":
        return config, _read_google(path)
    return config, _read_hf(path, config.model_type)


def read_state_dict(directory: str | os.PathLike) -> dict[str, np.ndarray]:
    """A torch module's tensors under their own names, from `directory`'s model.safetensors or, failing that,
    pytorch_model.bin (a sentence-transformers module folder, e.g. 2_Dense, saves either)."""
    directory = file_io.fspath(directory)
    safetensors_file = file_io.join(directory, "model.safetensors")
    if file_io.isfile(safetensors_file):
        return _read_safetensors(safetensors_file)
    if file_io.isfile(file_io.join(directory, "pytorch_model.bin")):
        return _read_torch_bin(file_io.join(directory, "pytorch_model.bin"))
    raise FileNotFoundError(f"No model.safetensors or pytorch_model.bin in {directory}")


def _read_safetensors(file: str) -> dict[str, np.ndarray]:
    if not file_io.isfile(file):
        raise FileNotFoundError(f"Weights file not found: {file}")
    try:
        return dict(safetensors.numpy.load(file_io.read_bytes(file)))
    except Exception as e:  # safetensors raises its own error types for truncated or garbled files
        raise CheckpointError(f"Cannot read {file}: {e}") from e


def _read_google(path: str) -> dict[str, np.ndarray]:
    import tensorflow as tf

    prefix = _checkpoint_prefix(path)
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


def _checkpoint_prefix(path: str) -> str:
    """The TF checkpoint of a Google directory: its one `*.ckpt*.index`, or of several, the latest step's
    (model.ckpt-1000, model.ckpt-2000, ...)."""
    prefixes = sorted(index.removesuffix(".index") for index in file_io.glob(file_io.join(path, "*.ckpt*.index")))
    if not prefixes:
        raise FileNotFoundError(f"No TF checkpoint (*.ckpt*.index) in {path}")
    steps = {prefix: re.search(r"-(\d+)$", prefix) for prefix in prefixes}
    if len(prefixes) > 1 and not all(steps.values()):
        raise CheckpointError(f"{path} holds several TF checkpoints and not all name their step: "
                              f"{', '.join(map(file_io.basename, prefixes))}; keep one")
    return max(prefixes, key=lambda prefix: int(steps[prefix].group(1)) if steps[prefix] else 0)


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

