"""How often a 3-seed comparison meets the fine-tuning goals, read from runs with more seeds a side.

The goals of `benchmarks.common.seed_spread` compare kbert's mean and standard deviation over 3 seeds with the
reference's. With 3 seeds both statistics move by several points from one draw of seeds to the next, so
one 3-seed table cannot say whether a missed goal is the framework or the draw. Given n > 3 seeds a side
(the runs of `benchmarks.finetune_quality --json`), this module reports per task and size:

- the difference of the means over all seeds, with an exact permutation p-value (two-sided: the share of
  all splits of the pooled scores into two groups of the same sizes whose means differ at least as much);
- the pass rate: over every choice of 3 of kbert's seeds and 3 of the reference's, the share that meets
  the mean goal, the spread goal and both;
- the same share for two identical frameworks: both triples drawn, without overlap, from the pooled
  scores. A pass rate near this one says the two frameworks fail the goal as often as two copies of one
  framework would.

    python -m benchmarks.studies.goal_odds --json runs.json

Pure Python. Up to 10 seeds a side every split and every pair of triples is counted (about a second a
cell); past a million of them, 200,000 are drawn at random with a fixed seed (20 seeds a side: 138
billion splits). A drawn p-value is (extreme draws + 1) / (draws + 1), which never reads 0.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import pathlib
import random
from typing import Any, Iterable, Sequence

from benchmarks.common.seed_spread import (DRAWS, FRAMEWORKS, MAX_SPLITS, Spread, goal_met, group_scores, p_text,
                                           permutation_p_value)

def _rates(pairs: Iterable[tuple[Spread, Spread]], tolerance: float) -> tuple[float, float, float]:
    """Shares of `pairs` (counted as they come, never held: the pooled case has about 1.3M) meeting each goal."""
    count = mean = spread = both = 0
    for kbert, reference in pairs:
        mean_ok, spread_ok = goal_met(kbert, reference, tolerance)
        count, mean, spread, both = count + 1, mean + mean_ok, spread + spread_ok, both + (mean_ok and spread_ok)
    return mean / count, spread / count, both / count


def subset_pass_rates(kbert: Sequence[float], reference: Sequence[float], k: int = 3,
                      tolerance: float = 1.0, max_splits: int = MAX_SPLITS, draws: int = DRAWS,
                      seed: int = 0) -> tuple[float, float, float]:
    """(mean goal, spread goal, both): the share of all choices of k of kbert's scores and k of the
    reference's whose k-seed comparison meets each goal (past `max_splits` choices, of `draws` random ones).

    Example:
    >>> subset_pass_rates([0.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 10.0])  # 3 of 4 triples hold the 10
    (0.25, 1.0, 0.25)
    """
    if math.comb(len(kbert), k) * math.comb(len(reference), k) > max_splits:
        rng = random.Random(seed)
        return _rates(((Spread.of(rng.sample(list(kbert), k)), Spread.of(rng.sample(list(reference), k)))
                       for _ in range(draws)), tolerance)
    ours = [Spread.of(c) for c in itertools.combinations(kbert, k)]
    theirs = [Spread.of(c) for c in itertools.combinations(reference, k)]
    return _rates(((a, b) for a in ours for b in theirs), tolerance)


def pooled_pass_rates(kbert: Sequence[float], reference: Sequence[float], k: int = 3,
                      tolerance: float = 1.0, max_splits: int = MAX_SPLITS, draws: int = DRAWS,
                      seed: int = 0) -> tuple[float, float, float]:
    """`subset_pass_rates` for two identical frameworks: every ordered pair of disjoint k-subsets of the
    pooled scores, the first playing kbert, the second the reference (past `max_splits` pairs, `draws`
    random ones).

    Example:
    >>> pooled_pass_rates([0.0, 0.0], [0.0, 10.0], k=1)  # the 10 against a 0 fails: 3 of 12 pairs
    (0.75, 1.0, 0.75)
    """
    pooled = [float(v) for v in (*kbert, *reference)]
    if math.comb(len(pooled), k) * math.comb(len(pooled) - k, k) > max_splits:
        rng = random.Random(seed)
        draw = (rng.sample(pooled, 2 * k) for _ in range(draws))
        return _rates(((Spread.of(d[:k]), Spread.of(d[k:])) for d in draw), tolerance)
    subsets = [(sum(1 << i for i in c), Spread.of([pooled[i] for i in c]))
               for c in itertools.combinations(range(len(pooled)), k)]
    return _rates(((a, b) for mask_a, a in subsets for mask_b, b in subsets if not mask_a & mask_b), tolerance)


def odds_table(runs: Sequence[dict[str, Any]], k: int = 3, tolerance: float = 1.0) -> str:
    """Markdown: per task and size with more than k seeds on both sides, the means over all seeds, the
    permutation p-value, the goals over all seeds, and the k-seed pass rates (as run, and identical)."""
    lines = [
        f"| task | train size | seeds a side | kbert mean ± std | reference mean ± std | kbert - reference "
        f"| p (permutation) | goals over all seeds (mean / spread) | {k}-seed pass rate: mean / spread / both "
        f"| identical frameworks: mean / spread / both |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for (task, size), scores in group_scores(runs).items():
        kbert, reference = (scores.get(f, []) for f in FRAMEWORKS)
        if min(len(kbert), len(reference)) <= k:
            continue
        ours, theirs = Spread.of(kbert), Spread.of(reference)
        goals = " / ".join("yes" if ok else "**no**" for ok in goal_met(ours, theirs, tolerance))
        run = " / ".join(f"{r:.0%}" for r in subset_pass_rates(kbert, reference, k, tolerance))
        same = " / ".join(f"{r:.0%}" for r in pooled_pass_rates(kbert, reference, k, tolerance))
        lines.append(f"| {task} | {size} | {len(kbert)} / {len(reference)} | {ours.mean:.1f} ± {ours.std:.1f} "
                     f"| {theirs.mean:.1f} ± {theirs.std:.1f} | {ours.mean - theirs.mean:+.1f} "
                     f"| {p_text(permutation_p_value(kbert, reference))} | {goals} | {run} | {same} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", required=True, type=pathlib.Path, help="runs of benchmarks.finetune_quality")
    parser.add_argument("--k", type=int, default=3, help="seeds a side in the goal (default 3)")
    parser.add_argument("--tolerance", type=float, default=1.0, help="the mean goal's tolerance in points")
    args = parser.parse_args(argv)
    print(odds_table(json.loads(args.json.read_text(encoding="utf-8")), args.k, args.tolerance), end="")


if __name__ == "__main__":
    main()
