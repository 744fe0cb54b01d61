"""The cells of a kbert-against-a-PyTorch-peer speed study, the runner that times them, and its report's head.

A study times eight cells: kbert and its peer, each in float32 and bfloat16 (kbert as Keras' mixed_bfloat16, the
peer under torch's bf16 autocast), each with its framework's default threads and with one batch per core (as
`kbert predict` serves). Each cell runs in a process of its own (`python -m MODULE ... --one CELL`), after one
process has checked that both sides compute the same outputs, in interleaved rounds with the order reversed every
other round; the report opens with kbert's best over the peer's best and a table of every cell. Used by
benchmarks/studies/albert_inference.py and benchmarks/studies/embedding_speed.py.

    >>> list(cell_grid("torch"))[:4]
    ['kbert', 'kbert_bf16', 'kbert_per_core', 'kbert_bf16_per_core']
    >>> cell_grid("torch")["torch_bf16_per_core"]
    ('torch', 'bfloat16', True)
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from typing import Any

from benchmarks.common.report import run_in_own_process
from kbert.export import serving_threads

Cell = tuple[str, str, bool]  # (framework, precision, one batch per core)
PER_CORE_THREADS = " (`kbert predict`'s threads)"  # what kbert's float32 per-core cell's label adds


def cell_grid(peer: str) -> dict[str, Cell]:
    """kbert's four cells, then the peer's: `NAME`, `NAME_bf16`, `NAME_per_core`, `NAME_bf16_per_core`.

    Args:
        peer: str. the peer framework's name in its cells' names (e.g. "torch", "st").

    Returns:
        cell name -> (framework, precision, one batch per core).
    """
    return {f"{framework}{'_bf16' if precision == 'bfloat16' else ''}{'_per_core' if per_core else ''}":
            (framework, precision, per_core)
            for framework in ("kbert", peer) for per_core in (False, True) for precision in ("float32", "bfloat16")}


def cell_labels(peer: str, names: dict[str, tuple[str, str, str]]) -> dict[str, str]:
    """The name the report's table gives each cell of `cell_grid(peer)`.

    Args:
        peer: str. as in `cell_grid`.
        names: framework ("kbert" and `peer`) -> (its short name, its float32 cell's label, its bfloat16 cell's
            label). The cells one batch per core read `SHORT, PRECISION, one batch per core` (PRECISION: float32,
            bfloat16, or the peer's bf16 autocast).

    Returns:
        cell name -> label, in `cell_grid`'s order.
    """
    labels = {}
    for cell, (framework, precision, per_core) in cell_grid(peer).items():
        short, float32, bfloat16 = names[framework]
        if not per_core:
            labels[cell] = float32 if precision == "float32" else bfloat16
            continue
        kind = "bf16 autocast" if framework == peer and precision == "bfloat16" else precision
        threads = PER_CORE_THREADS if framework == "kbert" and precision == "float32" else ""
        labels[cell] = f"{short}, {kind}, one batch per core{threads}"
    return labels


def default_cells(cells: dict[str, Cell], native_bf16: bool) -> tuple[list[str], list[str]]:
    """(cells run by default, cells run only when named): bfloat16 is timed by default only where it is native."""
    bf16 = [name for name, (_, precision, _) in cells.items() if precision == "bfloat16"]
    return [name for name in cells if native_bf16 or name not in bf16], ([] if native_bf16 else bf16)


def set_cell_threads(framework: str, per_core: bool) -> int:
    """Gives a cell's process its threads, before either framework runs its first op: kbert one batch per core
    gets `kbert predict`'s serving threads (otherwise TensorFlow keeps its defaults); the peer gets one thread a
    batch per core, or every core for one batch.

    Returns:
        how many batches the cell keeps in flight (one per core, or one).
    """
    workers = serving_threads.cores() if per_core else 1
    if framework == "kbert" and per_core:
        serving_threads.apply_serving_environment()
        serving_threads.configure_serving_threads(workers)
    if framework != "kbert":
        import torch

        torch.set_num_threads(1 if per_core else serving_threads.cores())
    return workers


def best_cell(rates: dict[str, list[float]], cells: dict[str, Cell], framework: str) -> str | None:
    """`framework`'s cell with the highest best round in `rates`, or None where none of its cells ran."""
    timed = [cell for cell in rates if cells[cell][0] == framework]
    return max(timed, key=lambda cell: max(rates[cell])) if timed else None


def ratio_and_table(rates: dict[str, list[float]], labels: dict[str, str], kbert_best: str | None,
                    peer_best: str | None, peer_name: str, header: str) -> list[str]:
    """A report's head: kbert's best over the peer's best (where both are given; the goal is 1.3x), then a table
    of every cell's best round, its rounds, and its ratio to `peer_best` ("-" where that is None).

    Args:
        rates: cell -> sentences/s of each round.
        labels: cell -> its name in the table.
        kbert_best, peer_best: the cells the ratio compares (`best_cell`'s), or None.
        peer_name: str. the peer as the text names it ("transformers").
        header: str. the table's first column's heading, naming the model and the batch.

    Returns:
        the report's lines.
    """
    best = {cell: max(values) for cell, values in rates.items()}
    lines = []
    if kbert_best and peer_best:
        ratio = best[kbert_best] / best[peer_best]
        lines += [f"**kbert's best / {peer_name}' best: {ratio:.2f}x** (goal >= 1.3: "
                  f"{'met' if ratio >= 1.3 else 'not met'}): {labels[kbert_best]} {best[kbert_best]:.1f} "
                  f"sentences/s against {labels[peer_best]} {best[peer_best]:.1f}.", ""]
    lines += [f"| {header} | sentences/s | per round | vs {peer_name}' best |", "|---|---:|---|---:|"]
    for cell, values in rates.items():
        versus = f"{best[cell] / best[peer_best]:.2f}x" if peer_best else "-"
        lines.append(f"| {labels[cell]} | {best[cell]:.1f} | {', '.join(f'{v:.1f}' for v in values)} | {versus} |")
    return lines


def answer_child(args: argparse.Namespace, check: Callable[[argparse.Namespace], dict],
                 time_cell: Callable[[str, argparse.Namespace], float]) -> int:
    """A child process of `run_cells` (`--one CELL`): prints `check(args)` (CELL "check") or
    `time_cell(CELL, args)` as JSON, and returns the exit status 0."""
    print(json.dumps(check(args) if args.one == "check" else time_cell(args.one, args)))
    return 0


def run_cells(module: str, cells: Sequence[str], child_args: Sequence[str], rounds: int, tolerance: float,
              peer: str) -> tuple[dict[str, Any], dict[str, list[float]]]:
    """Checks that both sides agree (`module`'s `--one check`), then times each cell in a process of its own.

    Args:
        module: str. the study, run as `python -m module CHILD_ARGS --one CELL` (CELL "check": the agreement).
        cells: the cells to time, in the order of the odd rounds (the even ones reverse it).
        child_args: the flags every child process gets.
        rounds: int. how many interleaved rounds.
        tolerance: float. the largest float32 difference (`check`'s "float32") that is still the same model.
        peer: str. the peer's name in the message that stops a disagreeing run.

    Returns:
        (what `check` printed, cell -> sentences/s of each round).
    """
    agreement = run_in_own_process(module, "check", child_args)
    print(f"agreement: {agreement}", flush=True)
    if agreement["float32"] > tolerance:
        sys.exit(f"kbert and {peer} disagree in float32 (max |difference| {agreement['float32']:.1e} > "
                 f"{tolerance}): not timing two different models")
    rates: dict[str, list[float]] = {cell: [] for cell in cells}
    for round_index in range(rounds):
        for cell in cells if round_index % 2 == 0 else cells[::-1]:
            rates[cell].append(run_in_own_process(module, cell, child_args))
            print(f"round {round_index + 1}: {cell} {rates[cell][-1]:.1f} sentences/s", flush=True)
    return agreement, rates
