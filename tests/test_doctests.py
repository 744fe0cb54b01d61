"""The default test run collects every docstring example under kbert/ (`>>>` lines are tests, not prose)."""

import configparser
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[1]


def test_the_default_run_collects_every_docstring_example():
    config = configparser.ConfigParser()
    config.read(ROOT / "pytest.ini")
    assert "kbert" in config["pytest"]["testpaths"].split()
    assert "--doctest-modules" in config["pytest"]["addopts"].split()
    with_examples = [p for p in (ROOT / "kbert").rglob("*.py") if ">>>" in p.read_text(encoding="utf-8")]
    assert len(with_examples) > 50  # the scan finds them at all
    # Nothing under kbert/ can take a module out of the collection.
    assert not list((ROOT / "kbert").rglob("conftest.py"))
