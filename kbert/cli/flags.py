"""Command-line flags from settings dataclasses: one flag per field, and the given values back as kwargs.

Every command that takes a settings object (`FinetuneConfig` and a task's settings, `PretrainConfig`,
`CreatePretrainingDataConfig`) builds its flags here, so a field's name is its flag (`sequence_length` is
`--sequence-length`) and its default stays the dataclass's. A flag that was renamed keeps working for one
release as a hidden alias that prints `warning: --old-name is deprecated; use --new-name` on stderr.

This module imports no TensorFlow: `kbert COMMAND --help` stays fast.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import typing
from collections.abc import Iterable, Mapping
from typing import Any


def parse_range(text: str) -> tuple[int, int]:
    """"0:40" -> (0, 40): a START:STOP flag value."""
    start, _, stop = text.partition(":")
    try:
        return int(start), int(stop)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected START:STOP (e.g. 0:40), got {text!r}") from None


def parse_column(text: str) -> str | int:
    """A column given by name or by index: "3" -> 3, "label" -> "label"."""
    return int(text) if text.lstrip("-").isdigit() else text


def flag_name(name: str) -> str:
    """`sequence_length` -> `--sequence-length`."""
    return "--" + name.replace("_", "-")


def _kind(hint: str) -> dict[str, Any]:
    """argparse keywords for a field of type `hint` (the annotation as text)."""
    if "bool" in hint:
        return {"action": argparse.BooleanOptionalAction}
    if "Sequence[int]" in hint or "tuple[int, int]" in hint:
        return {"type": parse_range, "metavar": "START:STOP"}
    if "[str]" in hint:  # list[str], Sequence[str]
        return {"type": str, "nargs": "+"}
    if "int" in hint and "str" in hint:
        return {"type": parse_column}
    if "int" in hint:
        return {"type": int}
    if "float" in hint:
        return {"type": float}
    return {"type": str}


class _DeprecatedAlias(argparse.Action):
    """A hidden old flag: sets the new flag's field and prints a deprecation warning on stderr."""

    def __init__(self, option_strings, dest, new_flag: str, const=None, **kwargs) -> None:
        self.new_flag = new_flag
        super().__init__(option_strings, dest, const=const, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        print(f"warning: {option_string} is deprecated; use {self.new_flag}", file=sys.stderr)
        setattr(namespace, self.dest, self.const if self.nargs == 0 else values)


def add_alias(parser: argparse.ArgumentParser | argparse._ActionsContainer, old: str, name: str,
              hint: str = "str") -> None:
    """Adds the hidden flag `--OLD` that sets field `name` (flag `--NAME`) with a deprecation warning.

    Args:
        parser: the parser (or argument group) to add it to.
        old: str. The old flag without dashes, e.g. "output" or "max_seq_length".
        name: str. The field it sets.
        hint: str. The field's annotation as text (a bool alias takes no value and sets True).
    """
    kind = _kind(hint)
    kind.pop("metavar", None)
    if kind.pop("action", None) is not None:
        kind = {"nargs": 0, "const": True}
    parser.add_argument(flag_name(old), dest=name, action=_DeprecatedAlias, new_flag=flag_name(name),
                        default=None, help=argparse.SUPPRESS, **kind)


def cli_fields(cls: type, skip: Iterable[str] = ()) -> list[tuple[dataclasses.Field, str]]:
    """The fields of dataclass `cls` that are flags, with their annotations as text.

    A field is left out when its metadata has `cli=False` or its name is in `skip`.
    """
    hints = typing.get_type_hints(cls)
    skip = set(skip)
    return [(f, str(hints[f.name])) for f in dataclasses.fields(cls)
            if f.metadata.get("cli", True) and f.name not in skip]


def add_dataclass_flags(
    parser: argparse.ArgumentParser | argparse._ActionsContainer,
    cls: type,
    *,
    help: Mapping[str, str] | None = None,  # noqa: A002  (argparse's own word)
    choices: Mapping[str, Iterable] | None = None,
    required: Iterable[str] = (),
    skip: Iterable[str] = (),
    aliases: Mapping[str, str] | None = None,
) -> None:
    """Adds one flag per field of the dataclass `cls` to `parser`.

    The type comes from the annotation: bool -> `--x/--no-x`, int, float, str, `Sequence[int]` -> START:STOP,
    `list[str]` -> one or more values, `int | str` -> a column name or index. Every flag's parser default is
    None (not given), so `collect` returns only what the command line set and the dataclass keeps its own
    defaults, which the help shows. A field's metadata may change that: `positional=True` makes it a
    positional argument (`metavar` names it in the usage), `nargs` sets how many values it takes (e.g. "*"),
    and `switch=True` makes a bool the plain switch `--x` (no `--no-x`).

    Args:
        parser: the parser (or argument group) to add the flags to.
        cls: type. A dataclass. A field's `metadata` may hold "help", "choices", "aliases" (its old flag
            names, without dashes), "positional", "metavar", "nargs", "switch" and `cli=False` (no flag).
        help: dict. Help texts by field name (over `metadata["help"]`).
        choices: dict. Allowed values by field name (over `metadata["choices"]`).
        required: field names that must be given (directly or by an alias).
        skip: field names that get no flag.
        aliases: dict. Old flag name -> field name: hidden flags that print a deprecation warning.

    Example:
        >>> @dataclasses.dataclass
        ... class Settings:
        ...     out: str = ""
        ...     steps: int = 10
        >>> parser = argparse.ArgumentParser()
        >>> add_dataclass_flags(parser, Settings, aliases={"output": "out"})
        >>> collect(parser.parse_args(["--out", "run"]), Settings)
        {'out': 'run'}
    """
    help, choices, required = dict(help or {}), dict(choices or {}), set(required)
    old_names: dict[str, list[str]] = {}
    for old, name in (aliases or {}).items():
        old_names.setdefault(name, []).append(old)
    for field, hint in cli_fields(cls, skip):
        old_names.setdefault(field.name, []).extend(field.metadata.get("aliases", ()))
        kind = _kind(hint)
        switch = field.metadata.get("switch", False)
        if switch:
            kind = {"action": "store_true"}
        if "nargs" in field.metadata:
            kind["nargs"] = field.metadata["nargs"]
        allowed = choices.get(field.name, field.metadata.get("choices"))
        if allowed is not None:
            kind["choices"] = list(allowed)
        text = help.get(field.name, field.metadata.get("help", ""))
        default = field.default if field.default is not dataclasses.MISSING else None
        if default not in (None, "", ()) and not switch and "default" not in text:
            text = f"{text} (default: {default})".strip()
        text = text.replace("%", "%%")
        if field.metadata.get("positional", False):
            kind.pop("metavar", None)
            parser.add_argument(field.name, metavar=field.metadata.get("metavar"), help=text, **kind)
            continue
        olds = old_names.get(field.name, [])
        if field.name in required and olds:
            # Either the flag or its old name: one of them is required.
            group = parser.add_mutually_exclusive_group(required=True)
            group.add_argument(flag_name(field.name), default=None, help=text, **kind)
            for old in olds:
                add_alias(group, old, field.name, hint)
            continue
        parser.add_argument(flag_name(field.name), default=None, required=field.name in required, help=text,
                            **kind)
        for old in olds:
            add_alias(parser, old, field.name, hint)


def collect(args: argparse.Namespace, cls: type, skip: Iterable[str] = ()) -> dict[str, Any]:
    """The values given on the command line for the fields of dataclass `cls` (keyword arguments of it)."""
    values = vars(args)
    return {f.name: values[f.name] for f, _ in cli_fields(cls, skip) if values.get(f.name) is not None}
