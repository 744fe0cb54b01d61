"""`load_tokenizer`: a `BertTokenizer` from an HF, Google or kbert checkpoint directory."""

from __future__ import annotations

import os

import kbert.file_io as file_io
from kbert.text.bert_tokenizer import BertTokenizer


def _casing_from_name(directory: str) -> bool | None:
    """True/False when the directory or a checkpoint file in it says "uncased"/"cased", else None."""
    names = [file_io.basename(directory)] + [
        name for name in file_io.listdir(directory) if file_io.isfile(file_io.join(directory, name))]
    for name in names:
        name = name.lower()
        if "uncased" in name:
            return True
        if "cased" in name:
            return False
    return None


def load_tokenizer(path: str | os.PathLike, lowercase: bool | None = None) -> BertTokenizer:
    """Builds the `BertTokenizer` of a checkpoint directory.

    Reads `vocab.txt` and the casing:
    - HF and kbert directories: `do_lower_case` (default True) and `strip_accents` from
      `tokenizer_config.json`;
    - Google directories (`bert_config.json` has no casing field): "uncased" in the directory or a
      checkpoint file name means lower-case, "cased" means cased; lower-case when neither says.

    Args:
        path: a checkpoint directory, or the `vocab.txt` file itself.
        lowercase: overrides the casing found in the directory.

    Returns:
        A `BertTokenizer`.

    Raises:
        FileNotFoundError: no `vocab.txt` at `path`.
        ValueError: the vocabulary lacks `[PAD]`, `[UNK]`, `[CLS]` or `[SEP]` (named in the message).

    Example:
    >>> tok = load_tokenizer(kbert.pretrained.minilm_path())  # doctest: +SKIP
    """
    path = file_io.fspath(path)
    vocab_file = path if file_io.isfile(path) else file_io.join(path, "vocab.txt")
    directory = file_io.dirname(vocab_file)
    if not file_io.isfile(vocab_file):
        raise FileNotFoundError(f"no vocab.txt at {vocab_file}")
    strip_accents = None
    config_file = file_io.join(directory, "tokenizer_config.json")
    if lowercase is None and file_io.isfile(config_file):
        config = file_io.read_json(config_file)  # invalid JSON: a ValueError naming the file
        lowercase = bool(config.get("do_lower_case", True))
        if config.get("strip_accents") is not None:
            strip_accents = bool(config["strip_accents"])
    if lowercase is None:
        from_name = _casing_from_name(directory)
        lowercase = True if from_name is None else from_name
    try:
        return BertTokenizer(str(vocab_file), lowercase=lowercase, strip_accents=strip_accents)
    except ValueError as err:
        raise ValueError(f"{vocab_file}: {err}") from err
