"""`kbert vocab`: learn a WordPiece vocabulary from text files."""

from __future__ import annotations

import argparse
import dataclasses

from kbert.cli.flags import add_dataclass_flags, collect
from kbert.text.text_files import DEFAULT_ENCODING_ERRORS, ENCODING_ERRORS


@dataclasses.dataclass
class VocabSettings:
    """The settings of `kbert vocab`, one flag each.

    Args:
        input: list of str. Text files, one text a line.
        size: int. The target vocabulary size.
        out: str. The vocab.txt to write.
        lowercase: bool. Uncased (lower-case, strip accents).
        min_count: int. Rarer tokens of the text are ignored.
        quiet: bool. No progress bar.
        encoding_errors: str. Bytes that are not UTF-8: "replace", "ignore" or "strict".

    Example:
        >>> VocabSettings(["corpus.txt"], size=8000, out="vocab.txt").min_count
        2
    """

    input: list[str] = dataclasses.field(metadata={"help": "text files, one text a line"})
    size: int = dataclasses.field(metadata={"help": "target vocabulary size"})
    out: str = dataclasses.field(metadata={"help": "vocab.txt to write"})
    lowercase: bool = dataclasses.field(default=False, metadata={
        "switch": True, "help": "uncased (lower-case, strip accents)"})
    min_count: int = dataclasses.field(default=2, metadata={"help": "ignore rarer words"})
    quiet: bool = dataclasses.field(default=False, metadata={"switch": True, "help": "no progress bar"})
    encoding_errors: str = dataclasses.field(default=DEFAULT_ENCODING_ERRORS, metadata={
        "choices": ENCODING_ERRORS,
        "help": "bytes that are not UTF-8: replace (default), ignore or strict; a warning names each file with "
                "repaired lines and how many"})


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Adds the command's flags, one per field of `VocabSettings`."""
    add_dataclass_flags(parser, VocabSettings, required=("input", "size", "out"))


def run(args: argparse.Namespace) -> int:
    """Learns the vocabulary and writes it, one token a line."""
    import kbert.file_io as file_io
    from kbert.text.vocabulary import learn_vocabulary

    settings = VocabSettings(**collect(args, VocabSettings))
    vocab = learn_vocabulary(
        settings.input, settings.size, lowercase=settings.lowercase, min_count=settings.min_count,
        verbose=not settings.quiet, encoding_errors=settings.encoding_errors,
    )
    file_io.write_text(settings.out, "\n".join(vocab) + "\n")  # creates the directory
    print(f"wrote {len(vocab)} tokens to {settings.out}")
    return 0
