"""Loading and saving BERT-family models (BERT, ALBERT, RoBERTa, DistilBERT) as checkpoints: Hugging Face,
Google's original TF1 (BERT and ALBERT), and kbert's own.

A checkpoint directory is read into (config, {google_name: array}) by `kbert.convert.readers` (which
tells the formats apart and whose names are re-exported here); the config's family picks the encoder class
(`kbert.models.families`), which is then filled from that dict, every tensor accounted for. Writing goes the
other way: the encoder's tensors under Google's names, saved in kbert's layout (safetensors), Hugging Face's
or Google's.
"""

from __future__ import annotations

import dataclasses
import os
import warnings

import keras
import numpy as np
import safetensors.numpy

import kbert.file_io as file_io
from kbert.file_io.model_source import resolve_model
from kbert.config import CONFIG_CLASSES, DROPOUT_FIELDS, BertConfig, check_model_type
from kbert.convert import google_tf1, names
from kbert.convert.readers import (KBERT_CONFIG, KBERT_WEIGHTS, CheckpointError, detect_format,
                                   read_checkpoint, read_config, vocabulary_file)
from kbert.models.bert_encoder import BertEncoder
from kbert.models.bert_pretrainer import BertPretrainer
from kbert.models.families import encoder_class

__all__ = [
    "KBERT_CONFIG", "KBERT_WEIGHTS", "CheckpointError", "assign_encoder_weights", "detect_format",
    "encoder_tensors", "load_pretrained", "load_pretrainer", "read_checkpoint", "read_config",
    "read_pretraining_heads", "save_pretrained", "vocabulary_file", "write_google_checkpoint",
]


def assign_encoder_weights(encoder: BertEncoder, tensors: dict[str, np.ndarray], source: str = "") -> None:
    """Fills every encoder weight from `tensors`, checking names and shapes.

    A checkpoint without the pooler (a masked-LM model's) leaves it as it is, with a warning; DistilBERT's
    checkpoints never hold one, and leave it fresh without a warning (`DistilBertEncoder`).

    Raises:
        CheckpointError naming each missing, extra or mis-shaped tensor. Pretraining-head tensors
        (`cls/...`) are allowed to remain; `kbert.BertPretrainer` reads them.
    """
    variables = names.encoder_variables(encoder)
    missing = sorted(set(variables) - set(tensors))
    pooler = sorted(name for name in variables if names.is_pooler(name))
    if missing == pooler and not encoder.bert_config.checkpoint_pooler:
        missing = []
    elif missing == pooler:
        # Masked-LM checkpoints (RoBERTa's releases, `*ForMaskedLM` models) hold no pooler; transformers starts one
        # afresh, and so does kbert: the sequence output is the checkpoint's, the pooled output is not trained.
        warnings.warn(f"Checkpoint {source} has no pooler ({', '.join(pooler)}): pooled_output comes from a fresh, "
                      "random dense layer until fine-tuned")
        missing = []
    extra = sorted(n for n in set(tensors) - set(variables) if not n.startswith(names.HEAD_PREFIXES))
    problems = []
    if missing:
        problems.append(f"missing tensors {missing}")
    if extra:
        problems.append(f"unexpected tensors {extra}")
    for name, (variable, google_shape) in variables.items():
        if name in tensors and tuple(tensors[name].shape) != google_shape:
            problems.append(f"{name} has shape {tuple(tensors[name].shape)}, the model expects {google_shape}")
    if problems:
        raise CheckpointError(f"Checkpoint {source} does not fit the {type(encoder).__name__}: " + "; ".join(problems))
    for name, (variable, _) in variables.items():
        if name not in tensors:
            continue  # the pooler of a masked-LM checkpoint: it keeps its initial value
        if getattr(variable, "_value", True) is None:  # built in a StatelessScope: not yet initialized
            variable._initializer = _CheckpointValue(tensors[name])  # noqa: SLF001 (see load_pretrained)
            continue
        array = tensors[name].astype(variable.dtype if variable.dtype != "bfloat16" else "float32")
        variable.assign(np.reshape(array, variable.shape))
    with keras.StatelessScope():
        pass  # leaving the outermost scope initializes every deferred variable, ours from the checkpoint


class _CheckpointValue:
    """A Keras initializer that returns a checkpoint tensor, reshaped to the variable's layout."""

    def __init__(self, array: np.ndarray) -> None:
        self.array = array

    def __call__(self, shape, dtype=None):
        return keras.ops.cast(np.reshape(self.array, shape), dtype)


def encoder_tensors(encoder: BertEncoder) -> dict[str, np.ndarray]:
    """The encoder's weights as `{google_name: array}` in Google's layout."""
    return {
        name: np.reshape(np.asarray(variable.numpy(), dtype=np.float32), shape)
        for name, (variable, shape) in names.encoder_variables(encoder).items()
    }


def load_pretrained(path: str | os.PathLike, model_type: str | None = None, **overrides) -> BertEncoder:
    """Builds the encoder of a Hugging Face, Google or kbert checkpoint directory, of the checkpoint's family.

    Args:
        path: the checkpoint directory, or a model name (a Hugging Face Hub name such as
            "hf://google-bert/bert-base-uncased" or "google-bert/bert-base-uncased": `kbert.file_io.model_source`).
        model_type: None, or "bert", "albert", "roberta" or "distilbert" to require that family (and so
            `BertEncoder`, `AlbertEncoder`, `RobertaEncoder` or `DistilBertEncoder`): a checkpoint of another family
            is a `CheckpointError` naming both.
        **overrides: config fields to change, e.g. `hidden_dropout_prob=0.0`, or `dtype`: a Keras dtype
            policy (`kbert.precision.keras_policy`).

    Returns:
        The encoder, of the class of the config's `model_type` (`BertEncoder` for Google's BERT files).

    Example:
    >>> encoder = load_pretrained("/path/to/albert-base-v2", model_type="albert")  # doctest: +SKIP
    >>> type(encoder).__name__  # doctest: +SKIP
    'AlbertEncoder'
    """
    path = resolve_model(path)
    config = read_config(path)
    if model_type is not None and check_model_type(model_type) != config.model_type:
        raise CheckpointError(
            f"{file_io.fspath(path)} holds a {config.family} checkpoint (model_type {config.model_type!r}), not the "
            f"{CONFIG_CLASSES[model_type].family} one asked for (model_type {model_type!r})")
    _, tensors = read_checkpoint(path)
    dtype = overrides.pop("dtype", None)
    fields = {**config.to_dict(), **overrides}
    # Built without running its initializers (variables created in a StatelessScope wait for a value):
    # the random draws for weights that the checkpoint replaces took most of the loading time (about
    # 0.5 s of 0.8 s for all-MiniLM-L6-v2). `assign_encoder_weights` then creates each variable with its
    # checkpoint value, once; variables it does not map (dropout seeds) get their own initial value.
    with keras.StatelessScope(initialize_variables=False):
        encoder = encoder_class(config.model_type)(**fields, dtype=dtype)
    assign_encoder_weights(encoder, tensors, source=str(path))
    return encoder


def load_pretrainer(path: str | os.PathLike, objective: str = "nsp", **overrides) -> BertPretrainer:
    """Builds a `BertPretrainer` from a checkpoint: the encoder, and the heads the checkpoint holds.

    Args:
        path: the checkpoint directory (written by `save_pretrained(pretrainer, ...)`, Google's release
            or a Hugging Face `BertForPreTraining`), or a model name, as in `load_pretrained`.
        objective: "nsp", "sop" or "none". Heads the checkpoint lacks start fresh.
        **overrides: config fields to change, as in `load_pretrained`.
    """
    path = resolve_model(path)
    pretrainer = BertPretrainer(load_pretrained(path, **overrides), objective=objective)
    pretrainer.load_head_tensors(read_pretraining_heads(path), strict=False)
    return pretrainer


def read_pretraining_heads(path: str | os.PathLike) -> dict[str, np.ndarray]:
    """The `cls/predictions/*` and `cls/seq_relationship/*` tensors of a checkpoint (may be empty)."""
    _, tensors = read_checkpoint(path)
    return {k: v for k, v in tensors.items() if k.startswith(names.HEAD_PREFIXES)}


def save_pretrained(
    model: BertEncoder | BertPretrainer,
    directory: str | os.PathLike,
    format: str = "kbert",
    vocabulary=None,
    head_tensors: dict[str, np.ndarray] | None = None,
    lowercase: bool | None = None,
    config: BertConfig | None = None,
) -> str | os.PathLike:
    """Writes an encoder, or a pretrainer's encoder and heads, in kbert's, Hugging Face's or Google's layout.

    Args:
        model: an encoder (`BertEncoder`, `AlbertEncoder`, `RobertaEncoder`, `DistilBertEncoder`), or a
            `BertPretrainer` (its heads are written too; `load_pretrainer` reads them back, `load_pretrained` the
            encoder alone).
        directory: created if missing.
        format: "kbert" (kbert_config.json, with the family's `model_type`, + kbert_weights.safetensors, Google's
            tensor names) or "hf" (config.json + model.safetensors, which `transformers`' `BertModel`,
            `AlbertModel`, `RobertaModel` or `DistilBertModel` reads; with heads, `BertForPreTraining`,
            `AlbertForPreTraining` or `AlbertForMaskedLM`, `RobertaForMaskedLM`, `DistilBertForMaskedLM`; DistilBERT's
            pooler is not written, as Hugging Face's DistilBERT has none) or "google" (BERT: bert_config.json +
            bert_model.ckpt.*, ALBERT: albert_config.json + model.ckpt-best.*, as Google's releases;
            `write_google_checkpoint`).
        vocabulary: optional list of tokens, vocab.txt path or `BertTokenizer`, written as vocab.txt; or the path
            of a SentencePiece model (`*.model`, ALBERT's), copied as spiece.model.
        head_tensors: optional Google-named head tensors to write with an encoder.
        lowercase: whether the vocabulary is lowercased (written to tokenizer_config.json).
        config: the config to write, if not the encoder's own: the same architecture with other
            training settings (a run pretrained without dropout keeps the rates fine-tuning should use).

    Returns:
        The directory, as given.

    Example:
    >>> save_pretrained(kbert.BertEncoder.from_preset("tiny", vocab_size=30), "/tmp/tiny")  # doctest: +SKIP
    """
    if isinstance(model, BertPretrainer):
        head_tensors = {**model.head_tensors(), **(head_tensors or {})}
        model = model.encoder
    encoder, given = model, directory
    directory = file_io.fspath(directory)
    file_io.makedirs(directory)
    tensors = {**encoder_tensors(encoder), **(head_tensors or {})}
    config = config or encoder.bert_config
    own_rates = {field: getattr(encoder.bert_config, field) for field in DROPOUT_FIELDS}
    if dataclasses.replace(config, **own_rates) != encoder.bert_config:
        raise ValueError("save_pretrained's config may differ from the encoder's in the dropout rates only")
    if format == "kbert":
        file_io.write_bytes(file_io.join(directory, KBERT_WEIGHTS), safetensors.numpy.save(tensors))
        config.to_json_file(file_io.join(directory, KBERT_CONFIG))
    elif format == "hf":
        _write_hf(directory, tensors, config, with_heads=bool(head_tensors))
    elif format == "google":
        google_tf1.write_checkpoint(tensors, config, directory)
    else:
        raise ValueError(f"Unknown format {format!r}; use 'kbert', 'hf' or 'google'")
    _write_vocabulary(directory, vocabulary, lowercase)
    return given


def _write_hf(directory: str, tensors: dict[str, np.ndarray], config: BertConfig, with_heads: bool) -> None:
    """model.safetensors and config.json in the layout of `transformers`' model class of the family."""
    model_type = config.model_type
    sentence_head = any(name.startswith("cls/seq_relationship/") for name in tensors)
    family = {"bert": "Bert", "albert": "Albert", "roberta": "Roberta", "distilbert": "DistilBert"}[model_type]
    if model_type in ("roberta", "distilbert") and sentence_head:
        raise ValueError(f"Hugging Face's {family}ForMaskedLM has no sentence head: save a {config.family} pretrainer "
                         "with objective 'none', or its encoder alone")
    if not with_heads:
        architecture = f"{family}Model"
    elif model_type == "bert" or (model_type == "albert" and sentence_head):
        architecture = f"{family}ForPreTraining"
    else:
        architecture = f"{family}ForMaskedLM"
    hf = {}
    for name, array in tensors.items():
        if (architecture.endswith("ForMaskedLM") or not config.checkpoint_pooler) and names.is_pooler(name):
            continue  # transformers' masked-LM models hold no pooler (a masked-LM objective never trains it)
        hf_name, transpose = names.google_to_hf(name, model_type)
        if with_heads and not name.startswith(names.HEAD_PREFIXES):
            hf_name = f"{model_type}.{hf_name}"  # the encoder inside `BertForPreTraining` (...) is `bert` (...)
        hf[hf_name] = np.ascontiguousarray(array.T if transpose else array)
    file_io.write_bytes(file_io.join(directory, "model.safetensors"),
                        safetensors.numpy.save(hf, metadata={"format": "pt"}))
    file_io.write_json(file_io.join(directory, "config.json"),
                       {"model_type": model_type, **config.hf_fields(), "architectures": [architecture]},
                       sort_keys=True)


def _write_vocabulary(directory: str, vocabulary, lowercase: bool | None) -> None:
    if vocabulary is None:
        return
    if isinstance(vocabulary, (str, os.PathLike)):
        sentencepiece = file_io.fspath(vocabulary).endswith(".model")
        file_io.copy(vocabulary, file_io.join(directory, "spiece.model" if sentencepiece else "vocab.txt"))
    else:
        if hasattr(vocabulary, "vocabulary"):  # a kbert BertTokenizer
            lowercase = vocabulary.lowercase if lowercase is None else lowercase
            vocabulary = vocabulary.vocabulary
        file_io.write_text(file_io.join(directory, "vocab.txt"), "\n".join(vocabulary) + "\n")
    if lowercase is not None:
        file_io.write_json(file_io.join(directory, "tokenizer_config.json"), {"do_lower_case": bool(lowercase)},
                           indent=None)


def write_google_checkpoint(
    tensors: dict[str, np.ndarray], config: BertConfig, directory: str | os.PathLike, vocabulary=None
) -> str | os.PathLike:
    """Writes `{google_name: array}` as Google's release of the family does: bert_config.json + bert_model.ckpt.*
    (BERT) or albert_config.json + model.ckpt-best.* (ALBERT), readable by Google's own code
    (`kbert.convert.google_tf1`). Not RoBERTa's, which Google never released.

    Args:
        tensors: the tensors under Google's names (`encoder_tensors`, and heads).
        config: the encoder's config.
        directory: created if missing.
        vocabulary: as `save_pretrained`'s.

    Returns:
        The directory, as given.
    """
    google_tf1.write_checkpoint(tensors, config, directory)
    _write_vocabulary(file_io.fspath(directory), vocabulary, None)
    return directory
