"""Every notebooks/*.ipynb executes top to bottom (small settings), and the committed copies hold their plots.

The slow test runs each notebook with nbclient in a fresh kernel, `KBERT_NOTEBOOK_SMALL=1` (tiny sizes),
in a temporary working directory; a cell error or an overrun of the notebook's time budget fails it.
The fast test checks the committed notebooks: executed in order, no error outputs, at least one plot.
"""

import os
import pathlib
import time

import pytest

nbformat = pytest.importorskip("nbformat")

ROOT = pathlib.Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
# Seconds one notebook may take with KBERT_NOTEBOOK_SMALL=1. Measured on 2 CPU cores shared with other
# jobs: 01-06 20-60 s each, 07 2-3 min (mostly its five SavedModel and int8 TFLite exports).
NOTEBOOK_TIMEOUT_S = int(os.environ.get("KBERT_NOTEBOOK_TIMEOUT", "900"))


def _outputs(notebook):
    for cell in notebook.cells:
        if cell.cell_type == "code":
            for output in cell.get("outputs", []):
                yield cell, output


def _has_plot(notebook) -> bool:
    return any("image/png" in output.get("data", {}) for _, output in _outputs(notebook))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_committed_notebook_has_outputs_and_plots(path):
    notebook = nbformat.read(path, as_version=4)
    nbformat.validate(notebook)
    code = [c for c in notebook.cells if c.cell_type == "code"]
    assert code, f"{path.name} has no code cells"
    assert any(c.cell_type == "markdown" for c in notebook.cells), f"{path.name} has no prose cells"
    counts = [c.execution_count for c in code]
    assert all(n is not None for n in counts), f"{path.name}: some cells were never executed"
    assert counts == sorted(counts) and len(set(counts)) == len(counts), (
        f"{path.name}: cells were not executed top to bottom in one run: {counts}")
    errors = [o for _, o in _outputs(notebook) if o.output_type == "error"]
    assert not errors, f"{path.name} was committed with an error: {errors[0].get('ename')}"
    assert _has_plot(notebook), f"{path.name} shows no plot"


@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_executes(path, tmp_path, monkeypatch):
    from nbclient import NotebookClient

    notebook = nbformat.read(path, as_version=4)
    monkeypatch.setenv("KBERT_NOTEBOOK_SMALL", "1")
    monkeypatch.setenv("TF_CPP_MIN_LOG_LEVEL", "2")
    monkeypatch.setenv("MPLBACKEND", "module://matplotlib_inline.backend_inline")
    # The kernel runs in tmp_path; it must still import this checkout's kbert.
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    # nbclient's timeout is per cell; the whole notebook's budget is checked after it ends.
    client = NotebookClient(
        notebook, timeout=NOTEBOOK_TIMEOUT_S, kernel_name="python3",
        resources={"metadata": {"path": str(tmp_path)}},
    )
    before = set((ROOT / "notebooks").iterdir())
    start = time.perf_counter()
    client.execute()  # raises CellExecutionError naming the cell on any error
    elapsed = time.perf_counter() - start
    assert elapsed < NOTEBOOK_TIMEOUT_S, f"{path.name} took {elapsed:.0f} s (budget {NOTEBOOK_TIMEOUT_S} s)"
    assert _has_plot(notebook), f"{path.name} produced no plot"
    assert set((ROOT / "notebooks").iterdir()) == before, f"{path.name} wrote files into notebooks/"
