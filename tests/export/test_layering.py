"""Imports point down: tasks below training and export, export never imports training, and no module of
kbert/ imports itself back through others (function-level imports included)."""

from __future__ import annotations

import ast
import pathlib

PACKAGE = pathlib.Path(__file__).resolve().parents[2] / "kbert"


def module_name(path: pathlib.Path) -> str:
    """`kbert/export/tflite.py` -> `kbert.export.tflite`; a package's `__init__.py` is the package."""
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph() -> dict[str, set[str]]:
    """{kbert module: the kbert modules it imports anywhere in its code}.

    `from kbert.x import y` points at the module `kbert.x.y` where there is one, else at `kbert.x`.
    """
    paths = {module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}
    graph = {}
    for name, path in paths.items():
        targets = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets.update(a.name for a in node.names if a.name.split(".")[0] == "kbert")
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").split(".")[0] == "kbert":
                targets.update(f"{node.module}.{a.name}" if f"{node.module}.{a.name}" in paths else node.module
                               for a in node.names)
        graph[name] = targets - {name}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One cycle `[a, b, ..., a]` per strongly connected group of modules (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in sorted(graph.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            group = set()
            while node not in group:
                group.add(stack.pop())
            if len(group) > 1:
                found.append(path_through(graph, group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def path_through(graph: dict[str, set[str]], group: set[str]) -> list[str]:
    """A cycle within `group` (strongly connected), from its first module back to it, by breadth-first search."""
    start = min(group)
    parents = {start: None}
    queue = [start]
    for node in queue:
        for target in sorted(graph[node] & group):
            if target == start:
                path = [node]
                while parents[path[-1]] is not None:
                    path.append(parents[path[-1]])
                return [*reversed(path), start]
            if target not in parents:
                parents[target] = node
                queue.append(target)
    raise AssertionError(f"{sorted(group)} is not strongly connected")


def offenders(folder: str, forbidden: tuple[str, ...]) -> dict[str, list[str]]:
    """{module under kbert/`folder`: the imports of it that start with one of `forbidden`, or are `kbert`}."""
    found = {}
    for name, targets in import_graph().items():
        if name.startswith(f"kbert.{folder}."):
            bad = sorted(t for t in targets if t == "kbert" or t.startswith(forbidden))
            if bad:
                found[name] = bad
    return found


def test_no_import_cycle_in_kbert():
    found = [" -> ".join(cycle) for cycle in cycles(import_graph())]
    assert found == [], "import cycles:\n" + "\n".join(found)


def test_export_does_not_import_training_or_cli():
    assert offenders("export", ("kbert.training", "kbert.cli")) == {}


def test_tasks_sit_below_training_export_and_cli():
    assert offenders("tasks", ("kbert.training", "kbert.export", "kbert.cli")) == {}


def test_the_scan_sees_imports():
    # The checks above would pass vacuously if the scan found nothing.
    graph = import_graph()
    assert "kbert.tasks.model_dir" in graph["kbert.export.export_source"]  # function-level
    assert "kbert.export.tflite_convert" in graph["kbert.export.savedmodel"]  # `from kbert.export import module`
    assert "kbert.tasks.registry" in graph["kbert.tasks.model_dir"]
    assert len(graph) > 100


def test_the_cycle_search_names_the_cycle():
    graph = {"kbert.a": {"kbert.b"}, "kbert.b": {"kbert.c"}, "kbert.c": {"kbert.a", "kbert.d"}, "kbert.d": set()}
    assert cycles(graph) == [["kbert.a", "kbert.b", "kbert.c", "kbert.a"]]
    assert cycles({"kbert.a": {"kbert.b"}, "kbert.b": set()}) == []
