"""Writes docs/cli.md from each command's `--help`, so the CLI reference cannot drift from the code.

    python -m kbert.cli.docs > docs/cli.md     (tests/cli/test_docs.py checks it is current)
"""

from __future__ import annotations

import argparse
import importlib
import os

from kbert.cli.main import COMMANDS


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
             "Generated from each command's `--help` by `python -m kbert.cli.docs > docs/cli.md`.", ""]
    for name, (_, help_text) in COMMANDS.items():
        parts += [f"## kbert {name}", "", help_text, "", "```", command_help(name).rstrip(), "```", ""]
        for sub, text in subcommand_helps(name).items():
            parts += [f"### kbert {name} {sub}", "", "```", text.rstrip(), "```", ""]
    return "\n".join(parts)


if __name__ == "__main__":
    print(render(), end="")
