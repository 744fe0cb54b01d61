"""`kbert download NAME --out DIR`: a model's files as a plain directory, to carry to a machine without network."""

from __future__ import annotations

import argparse
import dataclasses

from kbert.cli.flags import add_dataclass_flags, collect


@dataclasses.dataclass
class DownloadSettings:
    """The settings of `kbert download`, one flag each.

    Args:
        name: str. A model name: hf://ORG/NAME[@REVISION], ORG/NAME or NAME (the Hugging Face Hub), or a path.
        out: str. The directory to write (any path, gs:// too); replaced if it exists.

    Example:
        >>> DownloadSettings("hf://google-bert/bert-base-uncased", out="bert-base-uncased").out
        'bert-base-uncased'
    """

    name: str = dataclasses.field(metadata={
        "positional": True,
        "help": "hf://ORG/NAME[@REVISION], or ORG/NAME (the Hugging Face Hub, when no such local path exists), "
                "or a directory at any path"})
    out: str = dataclasses.field(metadata={"help": "directory to write: load it with --init DIR, kbert export DIR, ..."})


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Adds the command's flags, one per field of `DownloadSettings`."""
    parser.description = (
        "Fetch the files of a model that kbert reads (config, weights, tokenizer, sentence-transformers "
        "modules) through the Hugging Face cache, and write them as a plain directory with kbert_source.json "
        "(the repository and commit). HF_ENDPOINT, HF_TOKEN and HF_HUB_OFFLINE apply.")
    add_dataclass_flags(parser, DownloadSettings, required=("out",))


def run(args: argparse.Namespace) -> int:
    """Writes the directory; prints where, and the commit."""
    from kbert.file_io.model_source import download

    settings = DownloadSettings(**collect(args, DownloadSettings))
    source = download(settings.name, settings.out)
    commit = f" at commit {source.commit}" if source.commit else ""
    print(f"wrote {source.repo_id or source.path}{commit} to {settings.out}")
    return 0
