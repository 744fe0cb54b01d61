"""Sentence-transformers directories: the sentence model they describe, read and written without TensorFlow.

    DIR/modules.json               the modules in order: Transformer, Pooling, any Dense, optionally Normalize
    DIR/sentence_bert_config.json  the Transformer's `max_seq_length` and `do_lower_case` (in its folder)
    DIR/1_Pooling/config.json      the pooling mode: `pooling_mode`, or one `pooling_mode_*` flag set true
    DIR/2_Dense/                   a linear map and activation on the sentence vector (`kbert.convert.sentence_dense`)
    DIR/3_Normalize/               L2 normalisation (no settings, or the default ones)
    DIR/config_sentence_transformers.json   `prompts` ({name: text}) and `default_prompt_name`
    DIR/config.json, model.safetensors, vocab.txt, tokenizer_config.json   the Transformer: a BERT checkpoint

Both the layout of sentence-transformers 2.x (`sentence_transformers.models.Pooling`, the pooling flags,
`max_seq_length` in sentence_bert_config.json) and of later versions (`...modules.pooling.Pooling`,
`pooling_mode`, the length in tokenizer_config.json) are read. kbert reproduces BERT + one of the pooling modes
of `kbert.constants.POOLING_MODES` + Dense modules + Normalize exactly, and the prompts: sentence-transformers
prepends a prompt's text to each text before tokenizing (the default prompt's when no prompt is named), so the
prompt counts toward `max_seq_length` and, with the Pooling's `include_prompt` true (its default), is pooled
like the text. Any other module (`REFUSED_MODULES` says why each is), mode or setting is an error that names
it, never a different model that runs. `write_sentence_transformers` writes the 2.x layout, which every version
of sentence-transformers loads.
"""

from __future__ import annotations

import dataclasses
import os
from typing import Any, Sequence

import numpy as np

import kbert.file_io as file_io
from kbert.constants import POOLING_MODES
from kbert.convert.sentence_dense import SentenceDense, read_dense, write_dense

MODULES_FILE = "modules.json"
TRANSFORMER_CONFIG = "sentence_bert_config.json"
SETTINGS_FILE = "config_sentence_transformers.json"
POOLING_DIR = "1_Pooling"
# The flags of the 2.x pooling config, in the order sentence-transformers reads them.
POOLING_FLAGS = {"pooling_mode_cls_token": "cls", "pooling_mode_max_tokens": "max",
                 "pooling_mode_mean_tokens": "mean", "pooling_mode_mean_sqrt_len_tokens": "mean_sqrt_len_tokens",
                 "pooling_mode_weightedmean_tokens": "weightedmean", "pooling_mode_lasttoken": "lasttoken"}
# Module types as sentence-transformers 2.x names them in modules.json (later versions read them too).
MODULE_TYPES = {"Transformer": "sentence_transformers.models.Transformer",
                "Pooling": "sentence_transformers.models.Pooling",
                "Dense": "sentence_transformers.models.Dense",
                "Normalize": "sentence_transformers.models.Normalize"}
# sentence-transformers' other modules, and why kbert does not build them.
REFUSED_MODULES = {
    "Asym": "it routes each kind of input (query, document) through modules of its own; kbert builds one stack",
    "Router": "it routes each kind of input (query, document) through modules of its own; kbert builds one stack",
    "BoW": "a bag-of-words model, not a transformer",
    "WordEmbeddings": "static word vectors, not a transformer",
    "WordWeights": "weights static word vectors, which kbert does not have",
    "StaticEmbedding": "static token vectors, not a transformer",
    "CNN": "a convolution over the token vectors, which kbert has no layer for",
    "LSTM": "an LSTM over the token vectors, which kbert has no layer for",
    "LayerNorm": "a layer normalisation of the sentence vector, which kbert does not build",
    "WeightedLayerPooling": "it weighs the token vectors of every hidden layer; kbert pools the last layer's",
    "Dropout": "dropout on the sentence vector, which kbert does not build (fine-tuning would differ)",
    "CLIPModel": "an image and text model, not a BERT encoder",
}
_NO_LIMIT = 10**8  # a tokenizer_config.json `model_max_length` above this is the "no limit" sentinel


@dataclasses.dataclass(frozen=True)
class SentenceTransformersConfig:
    """What a sentence-transformers directory says about its sentence model, for kbert to rebuild it.

    Args:
        pooling: str. One of `kbert.constants.POOLING_MODES`.
        normalize: bool. An L2-normalising module follows the pooling (and the Dense modules).
        max_seq_length: int or None. The longest input in tokens, `[CLS]` and `[SEP]` included (longer texts
            are cut); None: the directory sets none (the encoder's positions are the limit).
        do_lower_case: bool. sentence-transformers lower-cases the text before the tokenizer does its part.
        transformer_path: str. The Transformer's folder, relative to the directory ("" for the directory).
        dense: tuple of `SentenceDense`. The Dense modules between the pooling and Normalize, in order.
        prompts: dict of prompt name -> the text prepended to each text (config_sentence_transformers.json).
        default_prompt_name: str or None. The prompt applied when none is named; None: no prompt then.

    Example:
    >>> config = read_sentence_transformers(kbert.pretrained.minilm_path())  # doctest: +SKIP
    >>> config.pooling, config.normalize, config.max_seq_length  # doctest: +SKIP
    ('mean', True, 256)
    """

    pooling: str = "mean"
    normalize: bool = False
    max_seq_length: int | None = None
    do_lower_case: bool = False
    transformer_path: str = ""
    dense: tuple[SentenceDense, ...] = ()
    prompts: dict[str, str] = dataclasses.field(default_factory=dict)
    default_prompt_name: str | None = None


def is_sentence_transformers_dir(path: str | os.PathLike) -> bool:
    """Whether `path` is a directory with a sentence-transformers `modules.json`."""
    return file_io.isfile(file_io.join(file_io.fspath(path), MODULES_FILE))


def _kind(module: dict[str, Any], source: str) -> str:
    """"Transformer", "Pooling", "Dense", "Normalize" or the unknown type's full name, from a modules.json
    entry."""
    kind = str(module.get("type", ""))
    last = kind.rsplit(".", 1)[-1]
    return last if kind.startswith("sentence_transformers.") and last in MODULE_TYPES else kind or f"? ({source})"


def _read_json(path: str) -> dict[str, Any]:
    config = file_io.read_json(path)
    if not isinstance(config, dict):
        raise ValueError(f"{path}: expected a JSON object, got {type(config).__name__}")
    return config


def pooling_mode(config: dict[str, Any], source: str) -> str:
    """The one pooling mode of a Pooling config (`pooling_mode`, or the `pooling_mode_*` flags; none: mean).

    Example:
    >>> pooling_mode({"pooling_mode_cls_token": True, "pooling_mode_mean_tokens": False}, "config.json")
    'cls'
    >>> pooling_mode({"pooling_mode": "mean_sqrt_len_tokens"}, "config.json")
    'mean_sqrt_len_tokens'
    """
    if "pooling_mode" in config:
        mode = config["pooling_mode"]
        modes = [mode] if isinstance(mode, str) else list(mode)
    else:
        modes = [name for flag, name in POOLING_FLAGS.items() if config.get(flag)] or ["mean"]
    if len(modes) != 1:
        raise ValueError(f"{source}: pooling modes {modes} are concatenated; kbert pools with one mode of "
                         f"{POOLING_MODES}")
    if modes[0] not in POOLING_MODES:
        raise ValueError(f"{source}: pooling mode {modes[0]!r} is not one kbert reproduces; it pools with one of "
                         f"{POOLING_MODES}")
    return modes[0]


def _max_seq_length(directory: str, transformer: dict[str, Any]) -> int | None:
    """sentence_bert_config.json's `max_seq_length`, else the tokenizer's `model_max_length` capped at the
    model's positions (as sentence-transformers caps it), else None."""
    if transformer.get("max_seq_length") is not None:
        return int(transformer["max_seq_length"])
    limits = []
    for name, key in (("tokenizer_config.json", "model_max_length"), ("config.json", "max_position_embeddings")):
        path = file_io.join(directory, name)
        value = _read_json(path).get(key) if file_io.isfile(path) else None
        if isinstance(value, (int, float)) and 0 < value < _NO_LIMIT:
            limits.append(int(value))
    return min(limits) if limits else None


def read_sentence_transformers(path: str | os.PathLike) -> SentenceTransformersConfig:
    """Reads the sentence model a sentence-transformers directory describes.

    Args:
        path: the directory (a local path or a URL).

    Returns:
        `SentenceTransformersConfig`.

    Raises:
        FileNotFoundError: no modules.json in `path`.
        ValueError: a module, pooling mode or setting kbert cannot reproduce exactly (named in the message):
            modules other than Transformer -> Pooling -> Dense ... [-> Normalize] (`REFUSED_MODULES`: e.g.
            LayerNorm, CNN), several or other pooling modes, a Normalize or Dense of other features, a default
            prompt that is not among the prompts, or prompts with a Pooling that leaves them out
            (`include_prompt` false).

    Example:
    >>> read_sentence_transformers(kbert.pretrained.minilm_path()).pooling  # doctest: +SKIP
    'mean'
    """
    directory = file_io.fspath(path)
    modules_file = file_io.join(directory, MODULES_FILE)
    if not file_io.isfile(modules_file):
        raise FileNotFoundError(f"{directory} is not a sentence-transformers directory: no {MODULES_FILE}")
    modules = file_io.read_json(modules_file)
    if not isinstance(modules, list) or not all(isinstance(m, dict) for m in modules):
        raise ValueError(f"{modules_file}: expected a list of modules")
    modules = sorted(modules, key=lambda m: int(m.get("idx", 0)))
    kinds = [_kind(m, modules_file) for m in modules]
    _check_modules(kinds, modules_file)
    transformer_path = str(modules[0].get("path", "")).strip("/")
    transformer_dir = file_io.join(directory, transformer_path) if transformer_path else directory
    transformer_file = file_io.join(transformer_dir, TRANSFORMER_CONFIG)
    transformer = _read_json(transformer_file) if file_io.isfile(transformer_file) else {}
    task = transformer.get("transformer_task", "feature-extraction")
    if task != "feature-extraction":
        raise ValueError(f"{transformer_file}: transformer_task {task!r}; kbert reads token vectors "
                         f"('feature-extraction')")
    pooling_file = file_io.join(directory, str(modules[1].get("path", POOLING_DIR)), "config.json")
    pooling = _read_json(pooling_file) if file_io.isfile(pooling_file) else {}
    mode = pooling_mode(pooling, pooling_file)
    dense, width = [], pooling.get("embedding_dimension", pooling.get("word_embedding_dimension"))
    for module in modules[2:kinds.count("Dense") + 2]:
        dense.append(read_dense(directory, str(module.get("path", "")).strip("/"),
                                int(width) if width is not None else None))
        width = dense[-1].units
    if kinds[-1] == "Normalize":
        normalize_file = file_io.join(directory, str(modules[-1].get("path", "")), "config.json")
        normalize = _read_json(normalize_file) if file_io.isfile(normalize_file) else {}
        for key in ("module_input_name", "module_output_name"):
            if normalize.get(key, "sentence_embedding") != "sentence_embedding":
                raise ValueError(f"{normalize_file}: {key} {normalize[key]!r}; kbert normalises the sentence "
                                 f"embedding only")
    prompts, default_prompt_name = _prompts(directory)
    if any(prompts.values()) and not pooling.get("include_prompt", True):
        raise ValueError(f"{pooling_file}: include_prompt false: sentence-transformers leaves the prompt's tokens "
                         f"out of the pooling, which kbert does not")
    return SentenceTransformersConfig(pooling=mode, normalize=kinds[-1] == "Normalize",
                                      max_seq_length=_max_seq_length(transformer_dir, transformer),
                                      do_lower_case=bool(transformer.get("do_lower_case", False)),
                                      transformer_path=transformer_path, dense=tuple(dense), prompts=prompts,
                                      default_prompt_name=default_prompt_name)


def _check_modules(kinds: list[str], source: str) -> None:
    """Raises unless the modules are Transformer, Pooling, any number of Dense, and optionally Normalize."""
    refused = [kind for kind in kinds if kind not in MODULE_TYPES]
    if refused:
        reasons = "; ".join(f"{kind}: {REFUSED_MODULES.get(kind.rsplit('.', 1)[-1], 'not a module kbert knows')}"
                            for kind in refused)
        raise ValueError(f"{source}: module(s) {refused} that kbert cannot reproduce ({reasons}); kbert reads "
                         f"Transformer -> Pooling [-> Dense ...] [-> Normalize]")
    middle = kinds[2:-1] if kinds[-1:] == ["Normalize"] else kinds[2:]
    if kinds[:2] != ["Transformer", "Pooling"] or any(kind != "Dense" for kind in middle):
        raise ValueError(f"{source}: the modules {kinds}; kbert reads Transformer -> Pooling [-> Dense ...] "
                         f"[-> Normalize] (a BERT encoder, one pooling mode, linear maps, L2 normalisation)")


def _prompts(directory: str) -> tuple[dict[str, str], str | None]:
    """config_sentence_transformers.json's `prompts` and `default_prompt_name` (none: {} and None)."""
    settings_file = file_io.join(directory, SETTINGS_FILE)
    settings = _read_json(settings_file) if file_io.isfile(settings_file) else {}
    prompts = settings.get("prompts") or {}
    if not isinstance(prompts, dict) or not all(isinstance(v, str) for v in prompts.values()):
        raise ValueError(f"{settings_file}: prompts must map names to texts, got {prompts!r:.80}")
    default = settings.get("default_prompt_name") or None
    if default is not None and default not in prompts:
        raise ValueError(f"{settings_file}: default_prompt_name {default!r} is not one of the prompts "
                         f"{sorted(prompts)}")
    return {str(name): text for name, text in prompts.items()}, default


def write_sentence_transformers(directory: str | os.PathLike, config: SentenceTransformersConfig,
                                dimension: int, dense_weights: Sequence[list[np.ndarray]] = ()) -> None:
    """Writes modules.json, 1_Pooling/config.json, the Dense modules, sentence_bert_config.json and, with
    prompts, config_sentence_transformers.json (sentence-transformers 2.x layout) into `directory`, which must
    also hold the Transformer's files (`kbert.save_pretrained(..., format="hf")` and a vocabulary) for
    sentence-transformers to load it.

    Args:
        directory: the directory (created if missing; a local path or a URL).
        config: `SentenceTransformersConfig`; `transformer_path` must be "" (the Transformer's files are in
            `directory`); the Dense modules' paths are chosen here ("2_Dense", ...).
        dimension: int. The width of the token vectors (the encoder's hidden size).
        dense_weights: one list per Dense module of `config.dense`: its Keras weights, [kernel (in, out)[, bias]].

    Example:
    >>> write_sentence_transformers("ram://st", SentenceTransformersConfig("cls", True, 64), 32)
    >>> config = read_sentence_transformers("ram://st")
    >>> config.pooling, config.normalize, config.max_seq_length
    ('cls', True, 64)
    """
    if config.pooling not in POOLING_MODES:
        raise ValueError(f"pooling mode {config.pooling!r} is not one of {POOLING_MODES}")
    if config.transformer_path:
        raise ValueError("write_sentence_transformers writes the Transformer at the top of the directory")
    if len(dense_weights) != len(config.dense):
        raise ValueError(f"{len(config.dense)} Dense module(s) but {len(dense_weights)} set(s) of weights")
    directory = file_io.fspath(directory)
    names = ["Transformer", "Pooling"] + ["Dense"] * len(config.dense) + (["Normalize"] if config.normalize else [])
    paths = ["", POOLING_DIR] + [f"{i}_{name}" for i, name in enumerate(names) if i >= 2]
    modules = [{"idx": i, "name": str(i), "path": path, "type": MODULE_TYPES[name]}
               for i, (name, path) in enumerate(zip(names, paths))]
    file_io.makedirs(directory)
    file_io.write_json(file_io.join(directory, MODULES_FILE), modules)
    pooling = {"word_embedding_dimension": int(dimension),
               **{flag: mode == config.pooling for flag, mode in POOLING_FLAGS.items() if mode in POOLING_MODES}}
    file_io.makedirs(file_io.join(directory, POOLING_DIR))
    file_io.write_json(file_io.join(directory, POOLING_DIR, "config.json"), pooling)
    for dense, path, weights in zip(config.dense, paths[2:], dense_weights):
        write_dense(directory, dataclasses.replace(dense, path=path), weights)
    transformer = {"max_seq_length": config.max_seq_length, "do_lower_case": bool(config.do_lower_case)}
    file_io.write_json(file_io.join(directory, TRANSFORMER_CONFIG), transformer)
    if config.prompts:
        file_io.write_json(file_io.join(directory, SETTINGS_FILE),
                           {"prompts": config.prompts, "default_prompt_name": config.default_prompt_name})
