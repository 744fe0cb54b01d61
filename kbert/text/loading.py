"""`load_tokenizer`: the tokenizer of an HF, Google or kbert checkpoint directory, chosen by its files."""

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


def _load_byte_level_bpe(directory: str, lowercase: bool | None = None):
    """`ByteLevelBpeTokenizer` of `vocab.json` + `merges.txt` (`add_prefix_space` from tokenizer_config.json)."""
    from kbert.text.byte_bpe_tokenizer import ByteLevelBpeTokenizer

    if lowercase:
        raise ValueError("a byte-level BPE vocabulary has no casing option (lowercase=True)")
    config_file = file_io.join(directory, "tokenizer_config.json")
    config = file_io.read_json(config_file) if file_io.isfile(config_file) else {}
    vocab_file = file_io.join(directory, "vocab.json")
    try:
        return ByteLevelBpeTokenizer(vocab_file, file_io.join(directory, "merges.txt"),
                                     add_prefix_space=bool(config.get("add_prefix_space", False)))
    except ValueError as err:
        raise ValueError(f"{vocab_file}: {err}") from err


# The files that say which tokenizer a directory without `vocab.txt` (WordPiece, `load_tokenizer`'s own
# case) holds, tried in order.
TOKENIZER_FILES = (
    (("vocab.json", "merges.txt"), _load_byte_level_bpe),
)


def load_tokenizer(path: str | os.PathLike, lowercase: bool | None = None):
    """Builds the tokenizer of a checkpoint directory, chosen by the files in it.

    `vocab.txt`: a `BertTokenizer`; `vocab.json` + `merges.txt`: a `ByteLevelBpeTokenizer` (RoBERTa,
    `add_prefix_space` from `tokenizer_config.json`). For WordPiece, reads the casing:
    - HF and kbert directories: `do_lower_case` (default True) and `strip_accents` from
      `tokenizer_config.json`;
    - Google directories (`bert_config.json` has no casing field): "uncased" in the directory or a
      checkpoint file name means lower-case, "cased" means cased; lower-case when neither says.

    Args:
        path: a checkpoint directory, or the vocabulary file itself (`vocab.txt` or `vocab.json`).
        lowercase: overrides the casing found in the directory (WordPiece only).

    Returns:
        A `BertTokenizer` or `ByteLevelBpeTokenizer`.

    Raises:
        FileNotFoundError: none of the vocabulary files at `path` (the message names them).
        ValueError: the vocabulary lacks a special token (named in the message).

    Example:
    >>> tok = load_tokenizer(kbert.pretrained.minilm_path())  # doctest: +SKIP
    """
    path = file_io.fspath(path)
    if file_io.isfile(path):  # a vocabulary file: another kind's first file, else WordPiece's (any name)
        vocab_file, directory = path, file_io.dirname(path)
        for names, load in TOKENIZER_FILES:
            if file_io.basename(path) == names[0]:
                return load(directory, lowercase)
    else:
        vocab_file, directory = file_io.join(path, "vocab.txt"), path
        if not file_io.isfile(vocab_file):
            for names, load in TOKENIZER_FILES:
                if all(file_io.isfile(file_io.join(directory, name)) for name in names):
                    return load(directory, lowercase)
            others = " or ".join(" + ".join(names) for names, _ in TOKENIZER_FILES)
            raise FileNotFoundError(f"no vocab.txt (or {others}) at {path}")
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
