"""Mean and spread over seeds, the kbert-vs-reference goal check, and the markdown tables of the
fine-tuning benchmark (pure Python: runs are dicts, see `benchmarks.finetune_quality`); the paired
t-interval of two arms fine-tuned with the same seeds (`paired_interval`, the pretraining studies).

A run is {"task": str, "size": int, "seed": int, "framework": "kbert" | "reference", "score": float
(points, 0-100), ...}. Goal, per task and size: kbert's mean >= the reference's mean - tolerance (1.0
point: 0.01 accuracy or 1.0 entity F1), and kbert's standard deviation <= 1.5 x the reference's.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import random
import statistics
from typing import Any, Iterable, Sequence

FRAMEWORKS = ("kbert", "reference")
SPREAD_FACTOR = 1.5


@dataclasses.dataclass(frozen=True)
class Spread:
    """Summary of one framework's scores over seeds.

    Args:
        mean: float. Mean score.
        std: float. Sample standard deviation (n - 1), 0 for a single seed.
        low: float. Lowest score.
        high: float. Highest score.
        n: int. Number of seeds.
    """

    mean: float
    std: float
    low: float
    high: float
    n: int

    @classmethod
    def of(cls, values: Sequence[float]) -> "Spread":
        """The spread of `values` (at least one).

        Example:
        >>> Spread.of([1.0, 2.0, 3.0])
        Spread(mean=2.0, std=1.0, low=1.0, high=3.0, n=3)
        """
        values = [float(v) for v in values]
        std = statistics.stdev(values) if len(values) > 1 else 0.0
        return cls(statistics.fmean(values), std, min(values), max(values), len(values))

    def __str__(self) -> str:
        return f"{self.mean:.1f} ± {self.std:.1f} ({self.low:.1f}–{self.high:.1f})"


def goal_met(kbert: Spread, reference: Spread, tolerance: float = 1.0) -> tuple[bool, bool]:
    """(mean goal, spread goal): kbert.mean >= reference.mean - tolerance; kbert.std <= 1.5 x reference.std.

    Example:
    >>> goal_met(Spread.of([80.0, 82.0]), Spread.of([81.0, 81.5]))
    (True, False)
    """
    return kbert.mean >= reference.mean - tolerance - 1e-9, kbert.std <= SPREAD_FACTOR * reference.std + 1e-9


def group_scores(runs: Iterable[dict[str, Any]]) -> dict[tuple[str, int], dict[str, list[float]]]:
    """{(task, size): {framework: [scores in seed order]}}, in the order the groups first appear."""
    groups: dict[tuple[str, int], dict[str, list[float]]] = {}
    for run in sorted(runs, key=lambda r: r["seed"]):
        groups.setdefault((run["task"], run["size"]), {}).setdefault(run["framework"], []).append(run["score"])
    order = {}
    for run in runs:
        order.setdefault((run["task"], run["size"]), len(order))
    return dict(sorted(groups.items(), key=lambda item: order[item[0]]))


def quality_table(runs: Sequence[dict[str, Any]], metrics: dict[str, str], tolerance: float = 1.0) -> str:
    """Markdown: per task and training size, kbert's and the reference's mean ± std (min–max), the
    difference of the means and both goals; `metrics` maps a task to its metric's name."""
    lines = [
        "| task | metric | train size | seeds | kbert mean ± std (min–max) | reference mean ± std (min–max) "
        "| kbert - reference | mean goal | spread goal |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for (task, size), scores in group_scores(runs).items():
        spreads = {f: Spread.of(scores[f]) for f in FRAMEWORKS if scores.get(f)}
        cells = [str(spreads[f]) if f in spreads else "-" for f in FRAMEWORKS]
        difference, mean_goal, spread_goal = "-", "-", "-"
        if len(spreads) == 2:
            difference = f"{spreads['kbert'].mean - spreads['reference'].mean:+.1f}"
            mean_ok, spread_ok = goal_met(spreads["kbert"], spreads["reference"], tolerance)
            mean_goal, spread_goal = ("yes" if mean_ok else "**no**"), ("yes" if spread_ok else "**no**")
        seeds = max(len(v) for v in scores.values())
        lines.append(f"| {task} | {metrics.get(task, '')} | {size} | {seeds} | {cells[0]} | {cells[1]} "
                     f"| {difference} | {mean_goal} | {spread_goal} |")
    return "\n".join(lines) + "\n"


def wall_time_table(runs: Sequence[dict[str, Any]], goal: float = 1.3) -> str:
    """Markdown: per task, both whole-process wall times (mean over seeds), their ratio (reference /
    kbert, >= `goal` wanted), examples/s and the phases (start -> step 1 / training / after training)."""
    lines = [
        "| task | train size | kbert wall s | reference wall s | reference / kbert | goal | kbert ex/s "
        "(whole run / training) | reference ex/s (whole run / training) | kbert phases s (to step 1 / "
        "training / after) | reference phases s |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    groups: dict[tuple[str, int], dict[str, list[dict[str, Any]]]] = {}
    for run in runs:
        groups.setdefault((run["task"], run["size"]), {}).setdefault(run["framework"], []).append(run)

    def mean(items: list[dict[str, Any]], key: str) -> float:
        values = [r[key] for r in items if r.get(key) is not None]
        return statistics.fmean(values) if values else float("nan")

    def cells(items: list[dict[str, Any]]) -> tuple[str, str]:
        first, end, wall = (mean(items, k) for k in ("first_step_seconds", "train_end_seconds", "wall_seconds"))
        return (f"{mean(items, 'whole_run_examples_per_second'):.1f} / {mean(items, 'train_examples_per_second'):.1f}",
                f"{first:.1f} / {end - first:.1f} / {wall - end:.1f}")

    for (task, size), by in groups.items():
        k, r = by.get("kbert", []), by.get("reference", [])
        kw, rw = mean(k, "wall_seconds"), mean(r, "wall_seconds")
        ratio = rw / kw if k and r else float("nan")
        (k_speed, k_phases), (r_speed, r_phases) = cells(k), cells(r)
        lines.append(f"| {task} | {size} | {kw:.1f} | {rw:.1f} | {ratio:.2f}x | {'yes' if ratio >= goal else '**no**'} "
                     f"| {k_speed} | {r_speed} | {k_phases} | {r_phases} |")
    return "\n".join(lines) + "\n"


# Exact enumeration up to this many splits or pairs of triples (20 scores split 10 / 10: 184,756);
# past it, this many random draws.
MAX_SPLITS = 1_000_000
DRAWS = 200_000


def permutation_p_value(first: Sequence[float], second: Sequence[float], max_splits: int = MAX_SPLITS,
                        draws: int = DRAWS, seed: int = 0) -> float:
    """Two-sided permutation p-value of the difference of the two groups' means: exact up to
    `max_splits` splits, from `draws` random splits past it.

    Example:
    >>> permutation_p_value([1.0, 2.0, 3.0], [4.0, 5.0, 6.0])  # 2 of the 20 splits are this extreme
    0.1
    """
    pooled = [float(v) for v in (*first, *second)]
    n, total = len(first), sum(pooled)

    def gap(group_sum: float) -> float:
        return abs(group_sum / n - (total - group_sum) / (len(pooled) - n))

    observed = gap(sum(first))
    if math.comb(len(pooled), n) > max_splits:
        rng = random.Random(seed)
        extreme = sum(gap(sum(rng.sample(pooled, n))) >= observed - 1e-9 for _ in range(draws))
        return (extreme + 1) / (draws + 1)
    extreme = sum(gap(sum(split)) >= observed - 1e-9 for split in itertools.combinations(pooled, n))
    return extreme / math.comb(len(pooled), n)


def p_text(value: float) -> str:
    """A p-value as a table shows it: two decimals, or one digit and its exponent below 0.01."""
    return f"{value:.2f}" if value >= 0.01 else f"{value:.0e}"


# Two-sided 95% quantiles of Student's t by degrees of freedom (the seeds less one).
T95 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262, 10: 2.228,
       11: 2.201, 12: 2.179, 13: 2.160, 14: 2.145, 15: 2.131, 16: 2.120, 17: 2.110, 18: 2.101, 19: 2.093}


def paired_interval(a: list[float], b: list[float]) -> dict:
    """Mean of a - b over paired seeds, its sample standard deviation and 95% t-interval.

    Example:
    >>> r = paired_interval([0.80, 0.82, 0.81], [0.79, 0.80, 0.80])
    >>> round(r["mean"], 4), round(r["low"], 4), round(r["high"], 4)
    (0.0133, -0.001, 0.0277)
    """
    if len(a) != len(b) or len(a) < 2:
        raise ValueError(f"a paired interval needs two or more pairs, got {len(a)} and {len(b)} scores")
    differences = [x - y for x, y in zip(a, b)]
    mean, std = statistics.fmean(differences), statistics.stdev(differences)
    half = T95.get(len(differences) - 1, 1.96) * std / math.sqrt(len(differences))
    return {"mean": mean, "std": std, "low": mean - half, "high": mean + half, "n": len(differences)}


def seeds_to_resolve(std: float, difference: float) -> int | None:
    """Paired seeds whose 95% interval half-width falls under `difference` at this spread (None: no difference).

    Example:
    >>> seeds_to_resolve(0.01, 0.01)
    7
    """
    if difference <= 0:
        return None
    n = 2
    while T95.get(n - 1, 1.96) * std / math.sqrt(n) >= difference and n < 10_000:
        n += 1
    return n
