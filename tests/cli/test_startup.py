"""`kbert --help`, every `kbert COMMAND --help` and argument errors answer without TensorFlow.

Each case runs `kbert.cli.main.main` in a fresh process and lists the heavy frameworks it left in
`sys.modules`. (How long they take is measured by `python -m benchmarks.startup`, not asserted here.)
"""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys

import pytest

from kbert.cli.main import COMMANDS

ROOT = pathlib.Path(__file__).resolve().parents[2]
HEAVY = ("tensorflow", "keras", "keras_hub", "tensorflow_text", "torch", "transformers")
# Runs the command line, then prints the heavy modules that were imported, last.
RUN = f"""
import sys
from kbert.cli.main import main
try:
    code = main(sys.argv[1:])
except SystemExit as exit:
    code = exit.code
print(sorted(m for m in {HEAVY!r} if m in sys.modules))
sys.exit(code)
"""


def run_cli(*argv: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    return subprocess.run([sys.executable, "-c", RUN, *argv], capture_output=True, text=True, cwd=ROOT, env=env,
                          timeout=120)


def heavy_modules(proc: subprocess.CompletedProcess) -> str:
    return proc.stdout.strip().splitlines()[-1]


HELPS = [["--help"]] + [[name, "--help"] for name in COMMANDS] + [
    ["finetune", task, "--help"] for task in ("classify", "tag", "qa")]


@pytest.mark.parametrize("argv", HELPS, ids=" ".join)
def test_help_needs_no_tensorflow(argv):
    proc = run_cli(*argv)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "usage: kbert" in proc.stdout
    assert heavy_modules(proc) == "[]"


@pytest.mark.parametrize("argv", [
    ["finetune", "classify", "--train", "t.tsv"],             # --out missing
    ["finetune", "qa", "--out", "o", "--train", "t", "--doc-stride", "many"],
    ["pretrain", "--steps", "ten"],
    ["create-pretraining-data", "--input", "x.txt"],          # --vocab and --out missing
    ["no-such-command"],
], ids=" ".join)
def test_argument_errors_need_no_tensorflow(argv):
    proc = run_cli(*argv)
    assert proc.returncode == 2
    assert "error:" in proc.stderr
    assert heavy_modules(proc) == "[]"


def test_the_check_sees_tensorflow():
    # The checks above would pass vacuously if the printout missed imports: a command that runs does load it.
    proc = run_cli("finetune", "classify", "--train", "missing.tsv", "--out", "out", "--vocab", "missing.txt")
    assert proc.returncode == 1 and "missing.tsv" in proc.stderr
    assert "tensorflow" in heavy_modules(proc)
