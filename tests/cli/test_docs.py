import pathlib

from kbert.cli import docs

DOCS = pathlib.Path(__file__).resolve().parents[2] / "docs" / "cli.md"


def test_cli_reference_is_current():
    assert DOCS.read_text(encoding="utf-8") == docs.render(), (
        "docs/cli.md is stale: run `python -m kbert.cli.docs > docs/cli.md`")


def test_every_command_has_a_section():
    text = DOCS.read_text(encoding="utf-8")
    for name in docs.COMMANDS:
        assert f"## kbert {name}\n" in text
        assert f"usage: kbert {name}" in text
