"""Writes docs/cli.md from each command's `--help`, so the CLI reference cannot drift from the code.

    python -m kbert.cli.docs > docs/cli.md     (tests/cli/test_docs.py checks it is current)
"""

from __future__ import annotations

import argparse
import importlib
import os

from kbert.cli.main import COMMANDS


MODEL_NAMES = [
    "## Model names", "",
    "Every argument that takes a checkpoint or model (`kbert finetune --init`, `--preset`, `kbert pretrain --init`, "
    "`kbert export SRC`, `kbert convert SRC`, `kbert download NAME`, and `kbert.load_pretrained`, `load_tokenizer`, "
    "`load_sentence_encoder`, `load_pretrainer` in Python) takes any of:", "",
    "| form | read from |", "| --- | --- |",
    "| `/path/dir`, `gs://bucket/dir`, `ram://dir` | the directory, as it is |",
    "| `hf://ORG/NAME`, `hf://ORG/NAME@REVISION` | the Hugging Face Hub, through its cache |",
    "| `ORG/NAME[@REVISION]`, `NAME` | the Hub, when no local file or directory has that name |",
    "| `kaggle://keras/MODEL/keras/VARIATION/VERSION` | a keras-hub preset, through kagglehub's cache, converted once |",
    "| `bert_base_en_uncased`, ... (keras-hub's preset names) | the same, at the preset's Kaggle handle |",
    "| a directory keras-hub's `save_to_preset` wrote | the same |", "",
    "Hub names need `pip install \"kbert[hub]\"`. Only the files kbert reads are fetched (config, weights, "
    "tokenizer, sentence-transformers modules) into the Hugging Face cache (`HF_HOME`, `HF_HUB_CACHE`); "
    "`HF_ENDPOINT`, `HF_TOKEN` and `HF_HUB_OFFLINE=1` (the cache only) apply. `kbert finetune` records the "
    "repository and commit in `OUT/init.json`. For a machine without network, run `kbert download NAME --out DIR` "
    "where there is one and pass DIR.", "",
    "keras-hub presets are read by keras-hub's own loader (`Backbone.from_preset`, `Tokenizer.from_preset`) and "
    "converted by `kbert.from_keras_hub` into kbert's cache (`KBERT_CACHE`, default `~/.cache/kbert`); a later "
    "use of the same name reads the converted directory and asks neither keras-hub nor Kaggle.",
]


def command_parser(name: str) -> argparse.ArgumentParser:
    """The parser of `kbert NAME`, as `kbert.cli.main` builds it."""
    module_name, help_text = COMMANDS[name]
    parser = argparse.ArgumentParser(prog=f"kbert {name}", description=help_text)
    importlib.import_module(module_name).add_arguments(parser)
    return parser


def command_help(name: str) -> str:
    os.environ["COLUMNS"] = "100"  # stable wrapping, whatever the terminal
    return command_parser(name).format_help()


def subcommand_helps(name: str) -> dict[str, str]:
    """`{subcommand: --help text}` for a command with subcommands (`kbert finetune TASK`)."""
    os.environ["COLUMNS"] = "100"
    helps = {}
    for action in command_parser(name)._actions:
        if isinstance(action, argparse._SubParsersAction):  # argparse has no public accessor for these
            helps.update({sub: parser.format_help() for sub, parser in action.choices.items()})
    return helps


def render() -> str:
    """The whole reference, in Markdown."""
    parts = ["# kbert command-line reference", "",
             "Generated from each command's `--help` by `python -m kbert.cli.docs > docs/cli.md`.", "",
             *MODEL_NAMES, ""]
    for name, (_, help_text) in COMMANDS.items():
        parts += [f"## kbert {name}", "", help_text, "", "```", command_help(name).rstrip(), "```", ""]
        for sub, text in subcommand_helps(name).items():
            parts += [f"### kbert {name} {sub}", "", "```", text.rstrip(), "```", ""]
    return "\n".join(parts)


if __name__ == "__main__":
    print(render(), end="")
