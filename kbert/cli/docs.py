"""Writes docs/cli.md from each command's `--help`, so the CLI reference cannot drift from the code.

    python -m kbert.cli.docs > docs/cli.md     (tests/cli/test_docs.py checks it is current)
"""

from __future__ import annotations

import argparse
import importlib
import os

from kbert.cli.main import COMMANDS


def command_help(name: str) -> str:
    module_name, help_text = COMMANDS[name]
    parser = argparse.ArgumentParser(prog=f"kbert {name}", description=help_text)
    importlib.import_module(module_name).add_arguments(parser)
    os.environ["COLUMNS"] = "100"  # stable wrapping, whatever the terminal
    return parser.format_help()


def render() -> str:
    parts = ["# kbert command-line reference", "",
             "Generated from each command's `--help` by `python -m kbert.cli.docs > docs/cli.md`.", ""]
    for name, (_, help_text) in COMMANDS.items():
        parts += [f"## kbert {name}", "", help_text, "", "```", command_help(name).rstrip(), "```", ""]
    return "\n".join(parts)


if __name__ == "__main__":
    print(render(), end="")
