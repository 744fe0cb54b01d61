"""docs/scale-out.md: every `kbert` command in its code blocks parses against the real CLI."""

import ast
import pathlib
import re
import shlex

import pytest

from kbert.cli import docs
from kbert.cli.main import COMMANDS

ROOT = pathlib.Path(__file__).resolve().parents[2]
GUIDE = ROOT / "docs" / "scale-out.md"

# Flags the guide uses whose code is still being merged (issue 44). A command that needs one while the
# CLI lacks it is an expected failure that names it; once the flag exists the command must parse.
# An entry can go once its flag is in the CLI.
SEPARATORS = {"&&", "||", ";", "|", "&", "(", ")"}
BEAM_OPTION = re.compile(r"--[a-z][a-z0-9]*(_[a-z0-9]+)*(=.*)?$")  # Beam's options are snake_case


def _lexer(line: str) -> shlex.shlex:
    lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    lexer.commenters = "#"
    return lexer


def shell_lines(text: str) -> list[str]:
    """The guide's ```bash blocks as logical lines: `\\` continuations and open quotes joined."""
    lines = []
    for block in re.findall(r"```bash\n(.*?)```", text, re.S):
        current = ""
        for line in block.splitlines():
            if line.rstrip().endswith("\\"):
                current += line.rstrip()[:-1] + " "
                continue
            current += line
            try:
                list(_lexer(current))
            except ValueError:  # a quote still open: the command goes on on the next line
                current += "\n"
                continue
            lines.append(current)
            current = ""
        assert not current.strip(), f"unterminated command in docs/scale-out.md: {current!r}"
    return lines


def kbert_commands(line: str) -> list[list[str]]:
    """The `kbert ...` argument lists in one shell line, also inside a quoted `--command='...'`."""
    lexer = _lexer(line)
    commands, current, at_start = [], None, True
    for token in lexer:
        if token in SEPARATORS or set(token) <= set("&|;()<>"):
            current, at_start = None, True
        elif current is not None:
            current.append(token)
        elif at_start and re.match(r"[A-Za-z_][A-Za-z0-9_]*=", token):
            continue  # VAR=value before the command
        elif at_start and token == "kbert":
            current = []
            commands.append(current)
        else:
            at_start = False
            if "kbert " in token:
                commands += kbert_commands(token)
    return commands


def guide_commands(text: str | None = None) -> list[list[str]]:
    text = GUIDE.read_text(encoding="utf-8") if text is None else text
    return [argv for line in shell_lines(text) for argv in kbert_commands(line)]


def test_guide_has_the_commands_of_the_issue():
    seen = {" ".join(argv[:2]) for argv in guide_commands()}
    assert {"pretrain --train", "finetune classify", "create-pretraining-data --beam"} <= seen, seen
    text = GUIDE.read_text(encoding="utf-8")
    for needed in ("--strategy tpu --tpu local --jit-compile", "--strategy multi_worker", "TF_CONFIG=",
                   "--runner=DataflowRunner", "--runner=DirectRunner", "tensorflow-tpu==2.20.0", "ram://"):
        assert needed in text, f"docs/scale-out.md lacks {needed!r}"


def test_shell_parsing_finds_nested_and_prefixed_commands():
    line = ("TF_CONFIG='{\"task\":{\"index\":0}}' kbert pretrain --out o --strategy multi_worker & "
            "ssh h --command='source env && kbert export m --out e' # kbert predict ignored")
    assert kbert_commands(line) == [["pretrain", "--out", "o", "--strategy", "multi_worker"],
                                    ["export", "m", "--out", "e"]]
    assert kbert_commands("pip install -e . && cd kbert") == []


@pytest.mark.parametrize("argv", guide_commands(), ids=lambda argv: " ".join(argv[:3])[:60])
def test_guide_command_parses(argv, capsys):
    name = argv[0]
    assert name in COMMANDS, f"unknown command: kbert {name}"
    parser = docs.command_parser(name)
    try:
        _, unknown = parser.parse_known_args(argv[1:])
    except SystemExit:
        pytest.fail(f"`kbert {' '.join(argv)}` does not parse (argparse's message is above)")
    flags = {token.split("=")[0] for token in unknown if token.startswith("-")}
    others = set(flags)
    if name == "create-pretraining-data" and "--beam" in argv:
        # kbert's own flags are kebab-case; what it does not know goes to Beam unchanged.
        others = {flag for flag in others if not BEAM_OPTION.match(flag)}
    assert not others, f"`kbert {' '.join(argv)}`: unknown flags {sorted(others)}"
    assert "is deprecated" not in capsys.readouterr().err, f"`kbert {' '.join(argv)}` uses an old flag name"


def test_guide_paths_are_cloud_urls():
    text = GUIDE.read_text(encoding="utf-8")
    cluster = text[:text.index("## 6. What this was tested with")]  # section 6 runs on one machine
    for argv in guide_commands(cluster):
        if "--runner=DirectRunner" in argv:
            continue
        for flag in ("--out", "--init", "--train", "--validation", "--input", "--vocab"):
            if flag in argv:
                value = argv[argv.index(flag) + 1]
                assert value.startswith("gs://"), f"{flag} {value}: the guide's cluster paths are gs:// URLs"


def test_tpu_install_names_every_dependency_but_tensorflow():
    """The TPU VM install lists kbert's requirements by hand (pip must not install `tensorflow`)."""
    tree = ast.parse((ROOT / "setup.py").read_text(encoding="utf-8"))
    requires = next(ast.literal_eval(node.value) for node in ast.walk(tree) if isinstance(node, ast.Assign)
                    and getattr(node.targets[0], "id", "") == "INSTALL_REQUIRES")
    names = {re.match(r"[A-Za-z0-9_.-]+", req).group(0) for req in requires} - {"tensorflow"}
    text = GUIDE.read_text(encoding="utf-8")
    install = text[text.index("tensorflow-tpu==2.20.0"):text.index("pip check")]
    assert "pip install tensorflow " not in install
    missing = {name for name in names if not re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", install)}
    assert not missing, f"docs/scale-out.md's TPU install lacks {sorted(missing)}"


def test_readme_links_the_guide():
    assert "(docs/scale-out.md)" in (ROOT / "README.md").read_text(encoding="utf-8")
