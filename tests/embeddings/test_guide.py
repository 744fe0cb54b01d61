"""docs/embeddings.md: every `kbert` command in its code blocks parses against the real CLI."""

import pathlib

import pytest

from kbert.cli import docs
from tests.docs.test_scale_out_guide import BEAM_OPTION, guide_commands

GUIDE = pathlib.Path(__file__).resolve().parents[2] / "docs" / "embeddings.md"
COMMANDS = guide_commands(GUIDE.read_text(encoding="utf-8"))


def test_the_guide_shows_each_command():
    seen = {argv[0] for argv in COMMANDS}
    assert {"export", "embed", "index", "predict"} <= seen, seen
    assert sum("--beam" in argv for argv in COMMANDS) == 4


@pytest.mark.parametrize("argv", COMMANDS, ids=lambda argv: " ".join(argv[:3])[:60])
def test_guide_command_parses(argv):
    parser = docs.command_parser(argv[0])
    try:
        _, unknown = parser.parse_known_args(argv[1:])
    except SystemExit:
        pytest.fail(f"`kbert {' '.join(argv)}` does not parse (argparse's message is above)")
    flags = {token.split("=")[0] for token in unknown if token.startswith("-")}
    if "--beam" in argv:  # kbert's own flags are kebab-case; what it does not know goes to Beam unchanged
        flags = {flag for flag in flags if not BEAM_OPTION.match(flag)}
    assert not flags, f"`kbert {' '.join(argv)}`: unknown flags {sorted(flags)}"
