"""`kbert.cli.flags`: flags from a settings dataclass, typed from the annotations, help and choices from metadata."""

# As in kbert's settings modules, the annotations stay text until `typing.get_type_hints` resolves them.
from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Sequence

import pytest

from kbert.cli.flags import add_dataclass_flags, collect, parse_range


@dataclasses.dataclass
class Settings:
    out: str = ""
    steps: int = 10
    rate: float | None = None
    fast: bool = False
    lowercase: bool | None = None
    span: Sequence[int] | None = None
    files: list[str] = dataclasses.field(default_factory=list)
    column: str | int = "label"
    mode: str = dataclasses.field(default="a", metadata={"help": "the mode", "choices": ("a", "b")})
    verbose: int = dataclasses.field(default=1, metadata={"choices": (0, 1, 2)})
    internal: dict = dataclasses.field(default_factory=dict, metadata={"cli": False})


def parser(**kwargs) -> argparse.ArgumentParser:
    result = argparse.ArgumentParser(prog="test")
    add_dataclass_flags(result, Settings, **kwargs)
    return result


def parse(argv, **kwargs) -> dict:
    return collect(parser(**kwargs).parse_args(argv), Settings)


def test_types_come_from_the_annotations():
    given = parse(["--out", "run", "--steps", "3", "--rate", "0.5", "--fast", "--no-lowercase", "--span", "2:7",
                   "--files", "a.txt", "b.txt", "--column", "4", "--mode", "b"])
    assert given == {"out": "run", "steps": 3, "rate": 0.5, "fast": True, "lowercase": False, "span": (2, 7),
                     "files": ["a.txt", "b.txt"], "column": 4, "mode": "b"}
    assert parse(["--column", "sentence"]) == {"column": "sentence"}
    assert Settings(**given).span == (2, 7)


def test_only_given_values_are_collected_so_the_dataclass_keeps_its_defaults():
    assert parse([]) == {}
    assert Settings(**parse([])) == Settings()


def test_bad_values_are_usage_errors(capsys):
    for argv in (["--steps", "ten"], ["--span", "3"], ["--mode", "c"]):
        with pytest.raises(SystemExit) as exit_info:
            parse(argv)
        assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert "invalid int value: 'ten'" in err and "expected START:STOP" in err and "invalid choice: 'c'" in err


def test_help_choices_and_fields_without_a_flag():
    text = parser().format_help()
    assert "the mode (default: a)" in text and "{a,b}" in text and "{0,1,2}" in text
    assert "--internal" not in text
    assert "--steps" not in parser(skip=("steps",)).format_help()
    assert parse_range("0:40") == (0, 40)


def test_required_fields(capsys):
    with pytest.raises(SystemExit):
        parse([], required=("out",))
    assert "--out" in capsys.readouterr().err
    assert parse(["--out", "o"], required=("out",)) == {"out": "o"}


@dataclasses.dataclass
class Unflaggable:
    sizes: dict[str, int] = dataclasses.field(default_factory=dict)


def test_types_come_from_the_resolved_annotations_not_their_text(capsys):
    # `int` is an int flag and `str | int` a column; no type is guessed from words in the annotation.
    assert parse(["--verbose", "2"]) == {"verbose": 2}
    with pytest.raises(SystemExit):
        parse(["--verbose", "auto"])
    assert "invalid int value: 'auto'" in capsys.readouterr().err
    with pytest.raises(TypeError, match="no flag type"):
        add_dataclass_flags(argparse.ArgumentParser(), Unflaggable)


@dataclasses.dataclass
class Command:
    source: str = dataclasses.field(metadata={"positional": True, "metavar": "SRC", "help": "where from"})
    texts: list[str] = dataclasses.field(default_factory=list, metadata={"positional": True, "nargs": "*"})
    force: bool = dataclasses.field(default=False, metadata={"switch": True, "help": "replace it"})
    names: list[str] = dataclasses.field(default_factory=list, metadata={"nargs": "*"})


def command_parser() -> argparse.ArgumentParser:
    result = argparse.ArgumentParser(prog="test")
    add_dataclass_flags(result, Command)
    return result


def test_positional_fields_take_their_nargs_in_field_order():
    given = collect(command_parser().parse_args(["s", "a", "b", "--force"]), Command)
    assert given == {"source": "s", "texts": ["a", "b"], "force": True}
    assert Command(**given) == Command("s", ["a", "b"], force=True)
    assert collect(command_parser().parse_args(["s"]), Command) == {"source": "s", "texts": []}
    assert collect(command_parser().parse_args(["s", "--names"]), Command) == {"source": "s", "texts": [],
                                                                               "names": []}


def test_a_missing_positional_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as exit_info:
        command_parser().parse_args([])
    assert exit_info.value.code == 2
    assert "SRC" in capsys.readouterr().err


def test_a_switch_is_a_plain_store_true_flag(capsys):
    text = command_parser().format_help()
    assert "usage: test [-h] [--force] [--names [NAMES ...]] SRC [texts ...]" in " ".join(text.split())
    assert "--no-force" not in text and "replace it\n" in text and "(default: False)" not in text
    assert Command(**collect(command_parser().parse_args(["s"]), Command)).force is False
    with pytest.raises(SystemExit):
        command_parser().parse_args(["s", "--no-force"])
    capsys.readouterr()
