"""`load_tokenizer`: the tokenizer of an HF, Google or kbert checkpoint directory, chosen by its files."""

from __future__ import annotations

import os
from typing import Callable

import keras

import kbert.file_io as file_io
from kbert.file_io.model_source import resolve_model
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


def _tokenizer_config(directory: str) -> dict:
    config_file = file_io.join(directory, "tokenizer_config.json")
    return file_io.read_json(config_file) if file_io.isfile(config_file) else {}  # bad JSON: names the file


def _wordpiece(vocab_file: str, lowercase: bool | None) -> BertTokenizer:
    """BERT's WordPiece from `vocab.txt`. Casing: `do_lower_case` (default True) and `strip_accents` of an HF
    or kbert `tokenizer_config.json`; for a Google directory, "uncased"/"cased" in the directory or a
    checkpoint file name (lower-case when neither says)."""
    directory = file_io.dirname(vocab_file)
    strip_accents = None
    config = _tokenizer_config(directory)
    if lowercase is None and config:
        lowercase = bool(config.get("do_lower_case", True))
        if config.get("strip_accents") is not None:
            strip_accents = bool(config["strip_accents"])
    if lowercase is None:
        from_name = _casing_from_name(directory)
        lowercase = True if from_name is None else from_name
    return BertTokenizer(vocab_file, lowercase=lowercase, strip_accents=strip_accents)


def _sentencepiece(model_file: str, lowercase: bool | None) -> keras.layers.Layer:
    """ALBERT's SentencePiece from `spiece.model`, with `do_lower_case` (default True) and `keep_accents`
    (default False) of `tokenizer_config.json`, and the piece scores of an HF `tokenizer.json` when it has the
    same pieces (transformers' converter lowers pieces like "1," there, and transformers 5 reads them)."""
    from kbert.text.sentencepiece_model import SentencePieceModel
    from kbert.text.sentencepiece_tokenizer import SentencePieceTokenizer

    directory = file_io.dirname(model_file)
    config = _tokenizer_config(directory)
    model = SentencePieceModel.from_bytes(file_io.read_bytes(model_file))
    hf_file = file_io.join(directory, "tokenizer.json")
    hf_model = file_io.read_json(hf_file).get("model") or {} if file_io.isfile(hf_file) else {}
    vocab = hf_model.get("vocab") if hf_model.get("type") == "Unigram" else None
    if vocab and [piece for piece, _ in vocab] == model.pieces:
        model = model.with_scores([score for _, score in vocab])
    lowercase = bool(config.get("do_lower_case", True)) if lowercase is None else lowercase
    return SentencePieceTokenizer(model.proto, lowercase=lowercase,
                                  strip_accents=not config.get("keep_accents", False))


def _byte_level_bpe(vocab_file: str, lowercase: bool | None) -> keras.layers.Layer:
    """RoBERTa's byte-level BPE from `vocab.json` and the `merges.txt` beside it, with `add_prefix_space` of
    `tokenizer_config.json`; it has no casing option."""
    from kbert.text.byte_bpe_tokenizer import ByteLevelBpeTokenizer

    if lowercase:
        raise ValueError("a byte-level BPE vocabulary has no casing option (lowercase=True)")
    directory = file_io.dirname(vocab_file)
    merges = file_io.join(directory, "merges.txt")
    if not file_io.isfile(merges):
        raise FileNotFoundError(f"{vocab_file} is a byte-level BPE vocabulary without its merges.txt at {merges}")
    return ByteLevelBpeTokenizer(vocab_file, merges,
                                 add_prefix_space=bool(_tokenizer_config(directory).get("add_prefix_space", False)))


# What a directory holds -> the tokenizer that reads it; the first row whose file is there wins.
TOKENIZER_FILES: tuple[tuple[str, Callable[[str, bool | None], keras.layers.Layer]], ...] = (
    ("spiece.model", _sentencepiece),
    ("vocab.txt", _wordpiece),
    ("vocab.json", _byte_level_bpe),
)


def load_tokenizer(path: str | os.PathLike, lowercase: bool | None = None) -> keras.layers.Layer:
    """Builds the tokenizer of a checkpoint directory, chosen by the files it holds (`TOKENIZER_FILES`).

    - `spiece.model` (ALBERT): a `SentencePieceTokenizer`, casing and accents from `tokenizer_config.json`
      (`do_lower_case`, default True; `keep_accents`, default False);
    - `vocab.json` + `merges.txt` (RoBERTa): a `ByteLevelBpeTokenizer`, `add_prefix_space` from
      `tokenizer_config.json`;
    - `vocab.txt` (BERT, and ALBERT for Chinese): a `BertTokenizer`; casing from an HF or kbert
      `tokenizer_config.json` (`do_lower_case`, default True, and `strip_accents`), or for a Google
      directory (`bert_config.json` has no casing field) "uncased"/"cased" in the directory or a checkpoint
      file name (lower-case when neither says).

    Args:
        path: a checkpoint directory, or the tokenizer file itself (`spiece.model`, `*.model`, `vocab.json`,
            `vocab.txt` or another name for a WordPiece vocabulary), or a model name such as
            "hf://google-bert/bert-base-uncased" (`kbert.file_io.model_source`).
        lowercase: overrides the casing found in the directory.

    Returns:
        A `BertTokenizer`, `SentencePieceTokenizer` or `ByteLevelBpeTokenizer`.

    Raises:
        FileNotFoundError: none of the files is at `path` (the message names them).
        ValueError: the vocabulary lacks a special token (named in the message), or the file is not a
            SentencePiece model.

    Example:
    >>> tok = load_tokenizer(kbert.pretrained.minilm_path())  # doctest: +SKIP
    """
    path = resolve_model(path)
    if file_io.isfile(path):
        name = file_io.basename(path)
        builder = next((b for file, b in TOKENIZER_FILES if name == file), None)
        builder = builder or (_sentencepiece if name.endswith(".model") else _wordpiece)
        found = path
    else:
        found, builder = next(((file_io.join(path, file), b) for file, b in TOKENIZER_FILES
                               if file_io.isfile(file_io.join(path, file))), (None, None))
        if found is None:
            names = " or ".join(file for file, _ in TOKENIZER_FILES)
            raise FileNotFoundError(f"no tokenizer file ({names}) at {path}")
    try:
        return builder(found, lowercase)
    except ValueError as err:
        raise ValueError(f"{found}: {err}") from err
