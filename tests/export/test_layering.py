"""Imports point down: tasks below training and export, export never imports training, no cycle via kbert."""

import ast
import pathlib

PACKAGE = pathlib.Path(__file__).resolve().parents[2] / "kbert"


def imported_modules(folder: str) -> dict[str, set[str]]:
    """{file: every `kbert...` module it imports, lazily or not}."""
    out = {}
    for path in sorted((PACKAGE / folder).rglob("*.py")):
        names = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("kbert"):
                names.add(node.module)
            elif isinstance(node, ast.Import):
                names.update(a.name for a in node.names if a.name.startswith("kbert"))
        out[str(path.relative_to(PACKAGE))] = names
    return out


def offenders(folder: str, forbidden: tuple[str, ...]) -> dict[str, list[str]]:
    found = {}
    for path, names in imported_modules(folder).items():
        bad = sorted(n for n in names if n == "kbert" or n.startswith(forbidden))
        if bad:
            found[path] = bad
    return found


def test_export_does_not_import_training_or_cli():
    assert offenders("export", ("kbert.training", "kbert.cli")) == {}


def test_tasks_sit_below_training_export_and_cli():
    assert offenders("tasks", ("kbert.training", "kbert.export", "kbert.cli")) == {}


def test_the_scan_sees_imports():
    # The checks above would pass vacuously if the scan found nothing.
    assert "kbert.tasks.model_dir" in imported_modules("export")["export/savedmodel.py"]
    assert "kbert.tasks.registry" in imported_modules("tasks")["tasks/model_dir.py"]
