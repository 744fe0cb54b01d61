"""`kbert convert SRC --out DIR --format kbert|hf|google`: rewrite a checkpoint in another layout."""

from __future__ import annotations

import argparse
import dataclasses

from kbert.cli.flags import add_dataclass_flags, collect


@dataclasses.dataclass
class ConvertSettings:
    """The settings of `kbert convert`, one flag each.

    Args:
        source: str. A checkpoint directory: Hugging Face, Google TF1 (BERT or ALBERT) or kbert; or a model name.
        out: str. The directory to write.
        format: str. The layout to write: "kbert", "hf" or "google" (BERT and ALBERT).

    Example:
        >>> ConvertSettings("bert-base", out="converted").format
        'kbert'
    """

    source: str = dataclasses.field(metadata={
        "positional": True, "help": "a checkpoint directory (Hugging Face, Google TF1 or kbert) or a model name: hf://ORG/NAME[@REVISION], "
                "or ORG/NAME when no such directory exists"})
    out: str = dataclasses.field(metadata={"help": "directory to write"})
    format: str = dataclasses.field(default="kbert", metadata={
        "choices": ("kbert", "hf", "google"), "help": "layout to write (default: kbert)"})


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Adds the command's flags, one per field of `ConvertSettings`."""
    add_dataclass_flags(parser, ConvertSettings, required=("out",))


def run(args: argparse.Namespace) -> int:
    """Reads the checkpoint, checks it, and writes it in the asked layout."""
    import kbert.file_io as file_io
    from kbert.convert import checkpoints

    settings = ConvertSettings(**collect(args, ConvertSettings))
    source, out = file_io.resolve_model(settings.source), settings.out
    _, tensors = checkpoints.read_checkpoint(source)
    encoder = checkpoints.load_pretrained(source)  # validates every tensor against the config
    heads = checkpoints.read_pretraining_heads(source)
    vocabulary = checkpoints.vocabulary_file(source)  # vocab.txt, or ALBERT's SentencePiece model
    checkpoints.save_pretrained(encoder, out, format=settings.format, vocabulary=vocabulary, head_tensors=heads or None)
    tokenizer_config = file_io.join(source, "tokenizer_config.json")
    if settings.format != "google" and file_io.isfile(tokenizer_config) and vocabulary is not None:
        file_io.copy(tokenizer_config, file_io.join(out, "tokenizer_config.json"))
    print(f"Wrote {settings.format} checkpoint ({len(tensors)} tensors) to {out}")
    return 0
