"""BENCHMARKS.md is a record a user can read: short, a summary table first, and every command it names runs."""

import importlib.util
import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[1]
RECORD = ROOT / "BENCHMARKS.md"


def test_the_record_is_short_and_opens_with_the_summary_table():
    lines = RECORD.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 400, f"BENCHMARKS.md has {len(lines)} lines; investigations go to docs/investigations/"
    headings = [line for line in lines if line.startswith("## ")]
    assert headings[0] == "## Summary"
    first_table = next(line for line in lines if line.startswith("| "))
    assert [c.strip() for c in first_table.strip("|").split("|")] == [
        "what", "kbert", "peer", "ratio", "host", "date", "command"]


def test_every_command_it_names_exists():
    text = RECORD.read_text(encoding="utf-8")
    modules = set(re.findall(r"python -m ([\w.]+)", text))
    assert "benchmarks.encoder_inference" in modules  # the pattern finds the commands at all
    missing = sorted(m for m in modules if importlib.util.find_spec(m) is None)
    assert not missing, f"BENCHMARKS.md names modules that do not exist: {missing}"
    for test_file in set(re.findall(r"python -m pytest ((?:tests|benchmarks)/[\w/]+\.py)", text)):
        assert (ROOT / test_file).is_file(), test_file
    for link in re.findall(r"\]\((docs/[\w/.-]+)\)", text):
        assert (ROOT / link).exists(), link


def test_at_most_twelve_headline_benchmarks_and_no_test_imports_them():
    headline = [p for p in (ROOT / "benchmarks").glob("*.py") if p.name != "__init__.py"]
    assert len(headline) <= 12, sorted(p.name for p in headline)
    importers = [p for p in (ROOT / "tests").rglob("*.py")
                 if re.search(r"^\s*(from|import) benchmarks\b", p.read_text(encoding="utf-8"), re.M)]
    assert not importers, importers
