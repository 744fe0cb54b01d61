"""Command-line flags from settings dataclasses: one flag per field, and the given values back as kwargs.

Every command that takes a settings object (`FinetuneConfig` and a task's settings, `PretrainConfig`,
`CreatePretrainingDataConfig`) builds its flags here, so a field's name is its flag (`sequence_length` is
`--sequence-length`) and its default stays the dataclass's; its help text and choices live in the field's
metadata.

This module imports no TensorFlow: `kbert COMMAND --help` stays fast.
"""

from __future__ import annotations

import argparse
import dataclasses
import types
import typing
from collections.abc import Iterable, Sequence
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


def _members(hint: Any) -> tuple[Any, ...]:
    """The types a union annotation allows, None left out: `int | str | None` -> (int, str)."""
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        return tuple(t for t in typing.get_args(hint) if t is not type(None))
    return (hint,)


def _kind(hint: Any) -> dict[str, Any]:
    """argparse keywords for a field annotated `hint` (a type, as `typing.get_type_hints` resolves it)."""
    members = _members(hint)
    if set(members) == {int, str}:
        return {"type": parse_column}
    if len(members) != 1:
        raise TypeError(f"no flag type for the annotation {hint}")
    (kind,) = members
    if kind is bool:
        return {"action": argparse.BooleanOptionalAction}
    if kind in (int, float, str):
        return {"type": kind}
    origin, items = typing.get_origin(kind), typing.get_args(kind)
    if origin in (tuple, Sequence) and set(items) == {int}:  # tuple[int, int], Sequence[int]
        return {"type": parse_range, "metavar": "START:STOP"}
    if origin in (list, Sequence) and items == (str,):  # list[str], Sequence[str]
        return {"type": str, "nargs": "+"}
    raise TypeError(f"no flag type for the annotation {hint}")


def cli_fields(cls: type, skip: Iterable[str] = ()) -> list[tuple[dataclasses.Field, Any]]:
    """The fields of dataclass `cls` that are flags, with their annotations resolved to types.

    A field is left out when its metadata has `cli=False` or its name is in `skip`.
    """
    hints = typing.get_type_hints(cls)
    skip = set(skip)
    return [(f, hints[f.name]) for f in dataclasses.fields(cls)
            if f.metadata.get("cli", True) and f.name not in skip]


def add_dataclass_flags(
    parser: argparse.ArgumentParser | argparse._ActionsContainer,
    cls: type,
    *,
    required: Iterable[str] = (),
    skip: Iterable[str] = (),
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
        cls: type. A dataclass. A field's `metadata` may hold "help", "choices", "positional", "metavar",
            "nargs", "switch" and `cli=False` (no flag).
        required: field names that must be given.
        skip: field names that get no flag.

    Example:
        >>> @dataclasses.dataclass
        ... class Settings:
        ...     out: str = dataclasses.field(default="", metadata={"help": "output directory"})
        ...     steps: int = 10
        >>> parser = argparse.ArgumentParser()
        >>> add_dataclass_flags(parser, Settings)
        >>> collect(parser.parse_args(["--out", "run"]), Settings)
        {'out': 'run'}
    """
    required = set(required)
    for field, hint in cli_fields(cls, skip):
        kind = _kind(hint)
        switch = field.metadata.get("switch", False)
        if switch:
            kind = {"action": "store_true"}
        if "nargs" in field.metadata:
            kind["nargs"] = field.metadata["nargs"]
        if "choices" in field.metadata:
            kind["choices"] = list(field.metadata["choices"])
        text = field.metadata.get("help", "")
        default = field.default if field.default is not dataclasses.MISSING else None
        if default not in (None, "", ()) and not switch and "default" not in text:
            text = f"{text} (default: {default})".strip()
        text = text.replace("%", "%%")
        if field.metadata.get("positional", False):
            kind.pop("metavar", None)
            parser.add_argument(field.name, metavar=field.metadata.get("metavar"), help=text, **kind)
            continue
        parser.add_argument(flag_name(field.name), default=None, required=field.name in required, help=text,
                            **kind)


def collect(args: argparse.Namespace, cls: type, skip: Iterable[str] = ()) -> dict[str, Any]:
    """The values given on the command line for the fields of dataclass `cls` (keyword arguments of it)."""
    values = vars(args)
    return {f.name: values[f.name] for f, _ in cli_fields(cls, skip) if values.get(f.name) is not None}


def beam_options(args: argparse.Namespace) -> list[str] | None:
    """Beam's pipeline options of a command with `--beam` (the flags kbert does not know), or None without it.

    The command sets `PASS_UNKNOWN_ARGS` (see `kbert.cli.main`) and has a `--beam` switch.

    Raises:
        UsageError: flags kbert does not know without `--beam`, or `--beam` without Apache Beam installed
            (the message names the `kbert[beam]` extra).
    """
    from kbert.cli.main import UsageError

    unknown = list(getattr(args, "unknown_args", []))
    if not args.beam:
        if unknown:
            raise UsageError(f"unrecognized arguments: {' '.join(unknown)} (pipeline options need --beam)")
        return None
    from kbert.pretraining_data.beam_pipeline import import_beam

    try:
        import_beam()
    except ImportError as error:
        raise UsageError(str(error)) from error
    return unknown
