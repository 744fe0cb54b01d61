"""Google's TF1 checkpoint layouts: the configs and the writer of BERT's release and of ALBERT's.

    bert_config.json   + bert_model.ckpt.{index,data-*}    google-research/bert
    albert_config.json + model.ckpt-best.{index,data-*}   google-research/albert (any model.ckpt-* is read)

Google's configs carry no `model_type`: the config file's name says the family. ALBERT's adds fields for
structures its released models never use (`down_scale_factor`, `net_structure_type`, `gap_size`,
`num_memory_blocks`), which kbert accepts at their released values only, and its code's `hidden_act` "gelu" is
the tanh approximation of GELU (Hugging Face's and kbert's "gelu_new"), where BERT's "gelu" is read as the exact
one. RoBERTa was never released in a Google layout, so none is written for it. The tensors are
`{google_name: array}` (`kbert.convert.names`); `kbert.convert.readers` reads them back.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

import kbert.file_io as file_io
from kbert.config import AlbertConfig, BertConfig, config_from_json_file

# model_type -> (config file, checkpoint prefix written), as each family's release names them.
LAYOUTS = {"bert": ("bert_config.json", "bert_model.ckpt"), "albert": ("albert_config.json", "model.ckpt-best")}
CONFIG_NAMES = {config_name: model_type for model_type, (config_name, _) in LAYOUTS.items()}

# ALBERT config fields of structures the released models do not use, with the one value kbert accepts.
ALBERT_FIXED_FIELDS = {"down_scale_factor": 1, "net_structure_type": 0, "gap_size": 0, "num_memory_blocks": 0}
# hidden_act as Google's ALBERT code names it -> kbert's name of the same function.
_ALBERT_ACTS = {"gelu": "gelu_new", "relu": "relu", "tanh": "tanh"}
_TANH_GELUS = ("gelu_new", "gelu_pytorch_tanh", "gelu_fast", "gelu_approximate")
_LAYER_NORM_EPS = 1e-12  # fixed in Google's code, so absent from its configs


def config_file(directory: str | os.PathLike) -> str | None:
    """The path of the Google config file in `directory` (bert_config.json or albert_config.json), or None.

    Raises:
        ValueError: the directory holds both, so its family is unknown.
    """
    found = [file_io.join(directory, name) for name in CONFIG_NAMES if file_io.isfile(file_io.join(directory, name))]
    if len(found) > 1:
        raise ValueError(f"{file_io.fspath(directory)} holds both {' and '.join(CONFIG_NAMES)}: keep the one of the "
                         "checkpoint's family")
    return found[0] if found else None


def read_config(directory: str | os.PathLike) -> BertConfig:
    """The config of a Google checkpoint directory: a `BertConfig` from bert_config.json, an `AlbertConfig` from
    albert_config.json (`albert_config_from_google`)."""
    file = config_file(directory)
    if file is None:
        raise FileNotFoundError(f"No {' or '.join(CONFIG_NAMES)} in {file_io.fspath(directory)}")
    if CONFIG_NAMES[file_io.basename(file)] == "bert":
        return config_from_json_file(file)
    data = file_io.read_json(file)
    if not isinstance(data, dict):
        raise ValueError(f"{file} holds no JSON object")
    return albert_config_from_google(data, source=file)


def albert_config_from_google(data: dict[str, Any], source: str = "albert_config.json") -> AlbertConfig:
    """An `AlbertConfig` from the fields of Google's albert_config.json.

    Args:
        data: the JSON object.
        source: the file, for error messages.

    Returns:
        The config; Google's `hidden_act` "gelu" (the tanh approximation in its code) becomes "gelu_new".

    Raises:
        ValueError: a structure field other than its released value (`ALBERT_FIXED_FIELDS`), or a `hidden_act`
            Google's ALBERT code does not name.

    Example:
    >>> config = albert_config_from_google({"vocab_size": 30000, "hidden_size": 768, "num_hidden_layers": 12,
    ...     "num_attention_heads": 12, "embedding_size": 128, "hidden_act": "gelu", "down_scale_factor": 1})
    >>> config.hidden_act, config.embedding_size
    ('gelu_new', 128)
    """
    for field, value in ALBERT_FIXED_FIELDS.items():
        if data.get(field, value) != value:
            raise ValueError(f"{source} sets {field} {data[field]!r}: kbert builds ALBERT as Google released it, "
                             f"with {field} {value}")
    act = data.get("hidden_act", "gelu")
    if act not in _ALBERT_ACTS:
        raise ValueError(f"{source} names hidden_act {act!r}, which Google's ALBERT code does not: it names "
                         f"{', '.join(_ALBERT_ACTS)}")
    return AlbertConfig.from_dict({**data, "hidden_act": _ALBERT_ACTS[act]})


def albert_config_to_google(config: AlbertConfig) -> dict[str, Any]:
    """The fields of Google's albert_config.json for `config` (the inverse of `albert_config_from_google`).

    Raises:
        ValueError: an activation Google's ALBERT code cannot name (the exact GELU: its "gelu" is the tanh one).

    Example:
    >>> fields = albert_config_to_google(AlbertConfig.from_preset("base"))
    >>> fields["hidden_act"], fields["embedding_size"], fields["net_structure_type"]
    ('gelu', 128, 0)
    """
    if config.hidden_act in _TANH_GELUS:
        act = "gelu"
    elif config.hidden_act in _ALBERT_ACTS.values():
        act = config.hidden_act
    else:
        raise ValueError(f"hidden_act {config.hidden_act!r} has no name in Google's ALBERT code, whose 'gelu' is the "
                         "tanh approximation: write this encoder in kbert's or Hugging Face's layout")
    return {**_without_default_eps(config.to_dict()), "hidden_act": act, **ALBERT_FIXED_FIELDS}


def _without_default_eps(fields: dict[str, Any]) -> dict[str, Any]:
    """Google's configs have no epsilon field; one that is not Google's is kept, for kbert to read back."""
    return {k: v for k, v in fields.items() if not (k == "layer_norm_eps" and v == _LAYER_NORM_EPS)}


def write_checkpoint(tensors: dict[str, np.ndarray], config: BertConfig, directory: str | os.PathLike) -> str:
    """Writes `{google_name: array}` and the config as the family's Google release does (`LAYOUTS`).

    The checkpoint is a TF1 name-based one (tf.compat.v1 Saver), readable by `tf.train.load_checkpoint` and by
    Google's `run_classifier.py` (BERT's or ALBERT's).

    Args:
        tensors: the tensors under Google's names, in Google's layout.
        config: a `BertConfig` or an `AlbertConfig`.
        directory: created if missing.

    Returns:
        The checkpoint prefix written (`directory/bert_model.ckpt` or `directory/model.ckpt-best`).

    Raises:
        ValueError: a family without a Google layout (RoBERTa), or an ALBERT activation Google cannot name.

    Example:
    >>> write_checkpoint(tensors, AlbertConfig.from_preset("base"), "gs://bucket/albert")  # doctest: +SKIP
    'gs://bucket/albert/model.ckpt-best'
    """
    import tensorflow as tf

    if config.model_type not in LAYOUTS:
        raise ValueError(f"Google's TF1 layout is written for BERT and ALBERT (Google's releases), not "
                         f"{config.family}: write the {config.family} checkpoint in kbert's or Hugging Face's layout")
    config_name, prefix = LAYOUTS[config.model_type]
    fields = albert_config_to_google(config) if config.model_type == "albert" else _without_default_eps(
        config.to_dict())
    directory = file_io.fspath(directory)
    file_io.makedirs(directory)
    prefix = file_io.join(directory, prefix)
    with tf.Graph().as_default():
        variables = [tf.compat.v1.Variable(array, name=name) for name, array in tensors.items()]
        saver = tf.compat.v1.train.Saver(variables)
        with tf.compat.v1.Session() as session:
            session.run(tf.compat.v1.global_variables_initializer())
            saver.save(session, prefix, write_meta_graph=False)
    file_io.write_json(file_io.join(directory, config_name), fields)
    return prefix
