"""keras-hub presets as kbert checkpoints: a preset is loaded by keras-hub's own loader and converted once into a
directory that every kbert reader takes.

    kaggle://keras/bert/keras/bert_tiny_en_uncased/2   a Kaggle handle, as keras-hub's `from_preset` takes it
    bert_tiny_en_uncased                               keras-hub's own preset name
    /path/to/preset                                    a directory that keras-hub's `save_to_preset` wrote

`keras_hub.models.Backbone.from_preset` and `keras_hub.models.Tokenizer.from_preset` read the preset (through
kagglehub's cache, `KAGGLEHUB_CACHE`, fetching what is not there); `kbert.from_keras_hub` converts the backbone;
the tokenizer's vocabulary becomes kbert's tokenizer files. The result is written to kbert's cache
(`KBERT_CACHE`, default `~/.cache/kbert`) under `keras_hub/`, with a `kbert_source.json` that names the preset: a
later use of the same name reads that directory and asks neither keras-hub nor Kaggle again. A handle without a
version is converted at the version Kaggle gave first; delete its cache directory to take a newer one.

What the conversion keeps and changes is `kbert.convert.keras_hub_backbone`'s (BERT's exact GELU; RoBERTa's
fresh pooler). Casing: WordPiece keeps the keras-hub tokenizer's `lowercase` (accents stripped with it, as BERT's
uncased vocabularies were made); SentencePiece (ALBERT), whose keras-hub tokenizer has no casing option, is
lower-cased unless the name says "cased" (ALBERT's released vocabularies are lower-case).
"""

from __future__ import annotations

import hashlib
import os
import re

from kbert.file_io import files as file_io
from kbert.file_io.paths import PathLike, fspath, is_local, join

KAGGLE_SCHEME = "kaggle://"
CACHE_ENV = "KBERT_CACHE"
_PRESET_NAME = re.compile(r"[a-z][a-z0-9]*(?:_[a-z0-9]+)+")  # keras-hub's names: bert_base_en_uncased
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def cache_root() -> str:
    """kbert's cache directory: `$KBERT_CACHE`, or `~/.cache/kbert`."""
    return os.environ.get(CACHE_ENV) or os.path.join(os.path.expanduser("~"), ".cache", "kbert")


def is_preset_directory(path: str) -> bool:
    """Whether `path` is a directory that keras-hub's `save_to_preset` wrote (its metadata names keras-hub)."""
    metadata = join(path, "metadata.json")
    if not (is_local(path) and file_io.isfile(metadata) and file_io.isfile(join(path, "config.json"))):
        return False
    try:
        return "keras_hub_version" in file_io.read_json(metadata)
    except ValueError:
        return False


def builtin_handle(name: str) -> str | None:
    """The Kaggle handle of one of keras-hub's own preset names, or None (keras-hub is imported only for a name
    written as keras-hub writes them: lower case words joined by "_")."""
    if not _PRESET_NAME.fullmatch(name):
        return None
    import keras_hub  # noqa: F401  (importing it registers its presets)
    from keras_hub.src.utils.preset_utils import BUILTIN_PRESETS

    preset = BUILTIN_PRESETS.get(name)
    return preset["kaggle_handle"] if preset else None


def preset_of(name: PathLike) -> str | None:
    """The preset string keras-hub loads for a kbert model name, or None when the name is not a keras-hub preset
    (see the module's table; a local directory of another kind, or a name that keras-hub does not know)."""
    text = fspath(name)
    if text.startswith(KAGGLE_SCHEME):
        return text
    if "://" in text:  # another file system (gs://, ram://) or the Hugging Face Hub (hf://)
        return None
    if file_io.exists(text):
        return text if is_preset_directory(text) else None
    if "/" in text:
        return None
    return text if builtin_handle(text) else None


def cache_directory(preset: str) -> str:
    """Where the conversion of `preset` is kept: a name's own folder, or for a local directory one that changes
    with its weights file (path, size and time), so an overwritten preset is converted again."""
    if os.path.isdir(preset):  # a local preset directory (kaggle:// handles and names are not paths)
        weights = os.stat(os.path.join(preset, "model.weights.h5"))
        key = f"{os.path.abspath(preset)}|{weights.st_size}|{weights.st_mtime_ns}"
        folder = "local--" + hashlib.sha1(key.encode("utf-8")).hexdigest()[:16]
    else:
        folder = _UNSAFE.sub("--", preset.removeprefix(KAGGLE_SCHEME)).strip("-")
    return join(cache_root(), "keras_hub", folder)


def _tokenizer_files(tokenizer, directory: str, lowercase_by_name: bool) -> None:
    """Writes the files of kbert's tokenizer with a keras-hub tokenizer's vocabulary into `directory`."""
    import keras_hub

    from kbert.text.bert_tokenizer import BertTokenizer
    from kbert.text.byte_bpe_tokenizer import ByteLevelBpeTokenizer
    from kbert.text.sentencepiece_tokenizer import SentencePieceTokenizer

    if isinstance(tokenizer, keras_hub.tokenizers.WordPieceTokenizer):
        kbert_tokenizer = BertTokenizer(tokenizer.get_vocabulary(), lowercase=tokenizer.lowercase)
    elif isinstance(tokenizer, keras_hub.tokenizers.SentencePieceTokenizer):
        kbert_tokenizer = SentencePieceTokenizer(tokenizer.proto, lowercase=lowercase_by_name)
    elif isinstance(tokenizer, keras_hub.tokenizers.BytePairTokenizer):
        kbert_tokenizer = ByteLevelBpeTokenizer(dict(tokenizer.vocabulary), list(tokenizer.merges))
    else:
        raise ValueError(f"keras-hub's {type(tokenizer).__name__} is not a tokenizer kbert reads (WordPiece, "
                         f"SentencePiece or byte-level BPE)")
    kbert_tokenizer.save_vocabulary(directory)


def convert_preset(preset: str, out: PathLike) -> str:
    """Loads a keras-hub preset (backbone and tokenizer) and writes it to `out` as a kbert checkpoint directory
    (kbert_config.json, kbert_weights.safetensors, the tokenizer's files), whole or not at all.

    Raises:
        ValueError: the preset's backbone is not a BERT, ALBERT or RoBERTa backbone.
    """
    import keras_hub

    from kbert.convert.checkpoints import save_pretrained
    from kbert.convert.keras_hub_backbone import from_keras_hub

    backbone = keras_hub.models.Backbone.from_preset(preset)
    try:
        encoder = from_keras_hub(backbone)
    except TypeError as error:
        raise ValueError(f"{preset}: {error}") from None
    tokenizer = keras_hub.models.Tokenizer.from_preset(preset)
    name = preset.lower()
    with file_io.staged_directory(out) as staged:
        save_pretrained(encoder, staged)
        _tokenizer_files(tokenizer, staged, lowercase_by_name="cased" not in name.replace("uncased", ""))
    return fspath(out)


__all__ = ["KAGGLE_SCHEME", "builtin_handle", "cache_directory", "cache_root", "convert_preset",
           "is_preset_directory", "preset_of"]
