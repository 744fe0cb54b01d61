"""A `create-pretraining-data` output directory: its layout, its metadata, and checks that its shards are whole.

The directory holds `part-00000-of-0000N.tfrecord` shards, the tokenizer's files (`vocab.txt`) and
`pretraining_data.json` (the settings, the vocabulary file, and each shard's record count and size in bytes).
`kbert.pretraining_data.tfrecords` writes and reads it, and re-exports every name here.

Example:
>>> metadata = read_pretraining_metadata("/data/pretraining")  # doctest: +SKIP
>>> files = tfrecord_files("/data/pretraining")  # each size checked against the metadata  # doctest: +SKIP
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator, Sequence

import tensorflow as tf

import kbert.file_io as file_io

METADATA_FILE = "pretraining_data.json"
VOCAB_FILE = "vocab.txt"
FORMAT = "kbert-pretraining-tfrecords"
# The files of a tokenizer directory that travel with the data (WordPiece, SentencePiece, byte-level BPE).
TOKENIZER_FILES = ("vocab.txt", "spiece.model", "vocab.json", "merges.txt", "tokenizer_config.json",
                   "special_tokens_map.json")


class CorruptTFRecordError(ValueError):
    """A TFRecord shard is truncated, corrupted or does not match its recorded size."""


def read_pretraining_metadata(directory: str | os.PathLike) -> dict:
    """Reads `pretraining_data.json` of a `create-pretraining-data` output directory."""
    path = file_io.join(directory, METADATA_FILE)
    if not file_io.isfile(path):
        raise FileNotFoundError(f"{directory} is not a create-pretraining-data output: no {METADATA_FILE}.")
    metadata = json.loads(file_io.read_text(path))
    if metadata.get("format") != FORMAT:
        raise ValueError(f"{path}: format is {metadata.get('format')!r}, expected {FORMAT!r}.")
    metadata.setdefault("sequence_length", metadata.get("max_seq_length"))  # data written by kbert 0.1
    return metadata


def copy_tokenizer_files(vocab: str | os.PathLike, directory: str | os.PathLike) -> str:
    """Copies the tokenizer that `vocab` names into an output directory, so the data carries its tokenizer.

    A file (a vocab.txt under any name) becomes `directory/vocab.txt`; a directory's `TOKENIZER_FILES`
    keep their names. `kbert.load_tokenizer(directory)` then reads them back.

    Args:
        vocab: str | PathLike. A vocabulary file or a tokenizer directory.
        directory: str | PathLike. The output directory (it exists).

    Returns:
        The name recorded as the metadata's "vocab_file": the first tokenizer file copied.

    Raises:
        FileNotFoundError: `vocab` is neither a file nor a directory holding a tokenizer file.
    """
    if file_io.isfile(vocab):
        target = file_io.join(directory, VOCAB_FILE)
        if not file_io.same_file(vocab, target):
            file_io.copy(vocab, target)
        return VOCAB_FILE
    names = [name for name in TOKENIZER_FILES if file_io.isdir(vocab) and file_io.isfile(file_io.join(vocab, name))]
    if not names:
        raise FileNotFoundError(f"no vocabulary at {vocab}: expected a vocab.txt or a directory holding one of "
                                f"{', '.join(TOKENIZER_FILES[:3])}")
    for name in names:
        if not file_io.same_file(file_io.join(vocab, name), file_io.join(directory, name)):
            file_io.copy(file_io.join(vocab, name), file_io.join(directory, name))
    return names[0]


def verify_tfrecords(files: Sequence[str | os.PathLike]) -> dict[str, int]:
    """Reads every record of every file, checking CRCs; returns the record count of each file.

    Raises:
        CorruptTFRecordError: naming the file, the record index and TensorFlow's reason.
    """
    counts = {}
    for path in map(str, files):
        count = 0
        try:
            for _ in tf.data.TFRecordDataset(path):
                count += 1
        except (tf.errors.DataLossError, tf.errors.InvalidArgumentError) as error:
            raise CorruptTFRecordError(
                f"TFRecord file {path} is corrupt after {count} good records: {error.message.split('[Op')[0]}"
                "Re-create it with `kbert create-pretraining-data`."
            ) from None
        counts[path] = count
    return counts


@contextlib.contextmanager
def naming_corrupt_file(files: Sequence[str | os.PathLike]) -> Iterator[None]:
    """Turns a `tf.errors.DataLossError` raised inside (e.g. by `model.fit`) into a `CorruptTFRecordError`
    that names the corrupt file (TensorFlow's own message gives only a byte offset)."""
    try:
        yield
    except tf.errors.DataLossError as error:
        verify_tfrecords(files)  # raises, naming the file
        raise CorruptTFRecordError(f"a TFRecord among {len(files)} files is corrupt: {error.message}") from error


def tfrecord_files(directory: str | os.PathLike, check_sizes: bool = True) -> list[str]:
    """The shard paths of an output directory; sizes are checked against the metadata (cheap)."""
    metadata = read_pretraining_metadata(directory)
    files = []
    for shard in metadata["shards"]:
        path = file_io.join(directory, shard["file"])
        if not file_io.isfile(path):
            raise FileNotFoundError(f"TFRecord shard {path} listed in {METADATA_FILE} is missing.")
        if check_sizes and file_io.size(path) != shard["bytes"]:
            raise CorruptTFRecordError(
                f"TFRecord file {path} has {file_io.size(path)} bytes but {shard['bytes']} were written: "
                "it is truncated or modified."
            )
        files.append(str(path))
    return files
