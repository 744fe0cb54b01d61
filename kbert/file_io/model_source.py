"""A model by name: a directory at any path, or a Hugging Face Hub name, resolved to a directory kbert reads.

    /path/to/dir, gs://bucket/dir, ram://dir   a path: used as it is
    hf://ORG/NAME, hf://ORG/NAME@REVISION      the Hugging Face Hub, always
    ORG/NAME[@REVISION], NAME                  the Hub, when no local file or directory has that name
    kaggle://OWNER/MODEL/keras/VARIATION[/V]   a keras-hub preset, converted once (`kbert.convert.keras_hub_presets`)
    bert_base_en_uncased, ...                  keras-hub's own preset names, the same way
    a directory keras-hub's save_to_preset wrote  the same way

Every entry point that takes a checkpoint or model (`kbert.load_pretrained`, `kbert.load_tokenizer`,
`kbert.load_sentence_encoder`, `kbert finetune --init`, `kbert export`, `kbert convert`, `kbert download`, ...)
calls `resolve_model` and reads the directory it returns.

A Hub name goes through `huggingface_hub.snapshot_download` (the optional extra `kbert[hub]`): only the files
kbert reads (`HUB_FILES`) are fetched, into the user's Hugging Face cache (`HF_HOME`, `HF_HUB_CACHE`).
huggingface_hub reads `HF_ENDPOINT`, `HF_TOKEN` and `HF_HUB_OFFLINE` itself; offline, or when the Hub cannot be
reached, the cached snapshot is used. A process asks the Hub about a name once: every later read of it (the
config, the weights, the tokenizer) gets the same snapshot, so one run cannot mix two commits.

Example:
    >>> parse_hub_name("hf://google-bert/bert-base-uncased@main")
    ('google-bert/bert-base-uncased', 'main')
    >>> resolve_source("ram://kbert-doc/checkpoint").path
    'ram://kbert-doc/checkpoint'
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import re
from typing import Any

from kbert.file_io import files as file_io  # the name the file-I/O policy test knows
from kbert.file_io.globbing import glob
from kbert.file_io.paths import PathLike, fspath, is_local, join

HUB_SCHEME = "hf://"
# What kbert's readers look for (kbert.convert.readers, kbert.convert.sentence_transformers, kbert.text.loading),
# at the top of the repository or in a sentence-transformers module folder ("*" crosses "/" in these patterns).
HUB_FILES = (
    "*config.json",                     # config.json, bert_/albert_/kbert_config.json, tokenizer_config.json,
                                        # sentence_bert_config.json, 1_Pooling/config.json
    "config_sentence_transformers.json", "modules.json", "*special_tokens_map.json", "*tokenizer.json",
    "*vocab.txt", "*vocab.json", "*merges.txt", "*spiece.model", "30k-clean.model",
    "*.safetensors", "*model.safetensors.index.json", "*.ckpt*",
    "*_Dense/pytorch_model.bin",        # a Dense module's weights (small), saved so before sentence-transformers 3
)
# Read only when a repository has no safetensors weights: the pickled file is often the same weights again.
TORCH_WEIGHTS = ("*pytorch_model.bin",)
# A missing name with one of these endings is a mistyped file, not a Hub name.
FILE_SUFFIXES = (".txt", ".json", ".jsonl", ".tsv", ".csv", ".model", ".safetensors", ".bin", ".keras", ".tflite")
SOURCE_FILE = "kbert_source.json"
# The module that converts keras-hub presets. It builds models, which read their files through this package, so it
# sits above file I/O: named here and imported when a preset is asked for (as a tokenizer names its TFLite twin),
# so that file I/O stays below every model module.
KERAS_HUB_PRESETS = "kbert.convert.keras_hub_presets"  # written by `kbert download`: where the directory's files came from
_REPO_ID = re.compile(r"(?:[A-Za-z0-9][\w.-]*/)?[A-Za-z0-9][\w.-]*")


class ModelNotFoundError(FileNotFoundError):
    """A model name that is neither a path nor a model kbert could fetch; the message says what was tried."""


@dataclasses.dataclass(frozen=True)
class ModelSource:
    """Where a model's files are, and for a Hub name exactly which ones.

    Args:
        name: str. The name as given.
        path: str. The directory (or file) kbert reads.
        repo_id: str or None. The Hub repository ("ORG/NAME").
        revision: str or None. The revision asked for ("main" by default).
        commit: str or None. The commit the revision resolved to.
    """

    name: str
    path: str
    repo_id: str | None = None
    revision: str | None = None
    commit: str | None = None

    def record(self) -> dict[str, Any]:
        """What a run writes about the model it started from: the name, and for a Hub model its commit."""
        return {k: v for k, v in dataclasses.asdict(self).items() if v is not None}


def parse_hub_name(name: PathLike) -> tuple[str, str | None] | None:
    """(repo_id, revision or None) for a Hub name, or None for a path (see the module's table)."""
    text = fspath(name)
    explicit = text.startswith(HUB_SCHEME)
    if explicit:
        text = text[len(HUB_SCHEME):]
    elif "://" in text or text.lower().endswith(FILE_SUFFIXES) or file_io.exists(text):
        return None
    repo_id, _, revision = text.partition("@")
    if not _REPO_ID.fullmatch(repo_id) or ".." in repo_id or repo_id.endswith((".", "-")):
        if explicit:
            raise ValueError(f"{name}: not a Hugging Face Hub name (hf://ORG/NAME or hf://ORG/NAME@REVISION)")
        return None
    return repo_id, revision or None


def resolve_source(name: PathLike) -> ModelSource:
    """The `ModelSource` of a name: a path as it is (with what `kbert download` recorded there), or a Hub model,
    fetched into the Hugging Face cache.

    Raises:
        ModelNotFoundError: a Hub name that is neither cached nor on the Hub, or huggingface_hub is not installed.
    """
    preset = _keras_hub_preset(name)
    if preset is not None:
        return dataclasses.replace(_from_keras_hub(preset), name=fspath(name))
    hub = parse_hub_name(name)
    if hub is None:
        path = fspath(name)
        recorded = join(path, SOURCE_FILE)
        if file_io.isfile(recorded):
            fields = {f.name for f in dataclasses.fields(ModelSource)} - {"name", "path"}
            return ModelSource(path, path, **{k: v for k, v in file_io.read_json(recorded).items() if k in fields})
        return ModelSource(path, path)
    source = _fetch(*hub)
    return dataclasses.replace(source, name=fspath(name))


def resolve_model(name: PathLike) -> str:
    """The directory (or file) to read for a model name: `resolve_source(name).path`, without reading a path's
    `kbert_source.json`."""
    preset = _keras_hub_preset(name)
    if preset is not None:
        return _from_keras_hub(preset).path
    hub = parse_hub_name(name)
    return fspath(name) if hub is None else _fetch(*hub).path


def forget_resolved() -> None:
    """Forgets the Hub names this process resolved: the next use asks the Hub (or the cache) again."""
    _fetch.cache_clear()
    _from_keras_hub.cache_clear()


def _keras_hub_preset(name: PathLike) -> str | None:
    if "://" in fspath(name) and not fspath(name).startswith("kaggle://"):
        return None  # gs://, ram://, hf://: not keras-hub's (and no import of it for them)
    return importlib.import_module(KERAS_HUB_PRESETS).preset_of(name)


@functools.lru_cache(maxsize=None)
def _from_keras_hub(preset: str) -> ModelSource:
    """The kbert checkpoint directory of a keras-hub preset: converted into kbert's cache on first use."""
    presets = importlib.import_module(KERAS_HUB_PRESETS)
    directory = presets.cache_directory(preset)
    recorded = join(directory, SOURCE_FILE)
    handle = presets.builtin_handle(preset) or preset  # a name's Kaggle handle; a handle or a directory as it is
    if not file_io.isfile(recorded):
        try:
            presets.convert_preset(preset, directory)
        except (OSError, ValueError) as error:  # keras-hub's and kagglehub's failures (HTTP ones are OSErrors)
            reason = (str(error).strip().splitlines() or [type(error).__name__])[0].rstrip(".")
            raise ModelNotFoundError(
                f"keras-hub preset {preset!r} could not be loaded (handle {handle}): {type(error).__name__}: "
                f"{reason}. keras-hub reads presets through kagglehub's cache (KAGGLEHUB_CACHE) and fetches the "
                f"rest from Kaggle; on a machine without network, run `kbert download {preset} --out DIR` where "
                f"there is one, carry DIR over and pass DIR.") from error
        file_io.write_json(recorded, {"repo_id": handle})
    return ModelSource(preset, directory, repo_id=handle)


@functools.lru_cache(maxsize=None)
def _fetch(repo_id: str, revision: str | None) -> ModelSource:
    name = repo_id + (f"@{revision}" if revision else "")
    try:
        import huggingface_hub
    except ImportError:
        raise ModelNotFoundError(
            f"{name}: no such local path, and fetching it from the Hugging Face Hub needs huggingface_hub: "
            'pip install "kbert[hub]"') from None
    try:
        folder = huggingface_hub.snapshot_download(repo_id, revision=revision, allow_patterns=list(HUB_FILES))
        commit = _basename(folder)
        if not glob(join(folder, "**", "*.safetensors")) and not glob(join(folder, "*.ckpt*")):
            folder = huggingface_hub.snapshot_download(repo_id, revision=commit, allow_patterns=list(TORCH_WEIGHTS))
    except (OSError, ValueError) as error:  # huggingface_hub's errors (HTTP ones too) are OSErrors
        raise ModelNotFoundError(_not_found(name, error)) from error
    return ModelSource(name, folder, repo_id, revision or "main", commit)


def _basename(path: str) -> str:
    return path.rstrip("/").rsplit("/", 1)[-1]


def _not_found(name: str, error: Exception) -> str:
    """What was tried for a Hub name, why it failed, and the way forward."""
    from huggingface_hub import constants

    reason = (str(error).strip().splitlines() or [type(error).__name__])[0].rstrip(".")
    offline = ("on (HF_HUB_OFFLINE=1: the Hub was not asked)" if constants.HF_HUB_OFFLINE else "off")
    return (f"model {name!r} not found. Tried: a local file or directory {name!r} (none); the Hugging Face cache "
            f"{constants.HF_HUB_CACHE} (no complete snapshot); the Hub at {constants.ENDPOINT} "
            f"(offline mode {offline}): {type(error).__name__}: {reason}. To use it on a machine without network, "
            f"run `kbert download {name} --out DIR` on one with network, carry DIR over and pass DIR.")


def download(name: PathLike, out: PathLike) -> ModelSource:
    """Copies a model's files (`resolve_source(name)`) into the directory `out`, at any path, with a
    `kbert_source.json` that names where they came from; returns the source.

    Example:
        >>> file_io.write_text("ram://kbert-download/model/config.json", "{}")
        >>> download("ram://kbert-download/model", "ram://kbert-download/copy").path
        'ram://kbert-download/model'
        >>> sorted(file_io.listdir("ram://kbert-download/copy"))
        ['config.json', 'kbert_source.json']
    """
    source = resolve_source(name)
    root = source.path.rstrip("/")
    if not file_io.isdir(root):
        raise ModelNotFoundError(f"{source.name}: directory not found: {root}")
    with file_io.staged_directory(out) as staged:
        for directory, _, names in file_io.walk(root):
            for file_name in names:
                if file_name != SOURCE_FILE:
                    # the Hub cache's files are links to blobs: copied as the files they point to
                    file_io.copy(join(directory, file_name), join(staged, directory[len(root):].lstrip("/"), file_name))
        file_io.write_json(join(staged, SOURCE_FILE), {k: v for k, v in source.record().items() if k != "path"})
    return source


__all__ = ["HUB_FILES", "ModelNotFoundError", "ModelSource", "download", "forget_resolved", "parse_hub_name",
           "resolve_model", "resolve_source"]
