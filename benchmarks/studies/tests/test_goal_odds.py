"""benchmarks/studies/goal_odds.py: the permutation p-value against scipy's, and the 3-seed pass rates on
cases counted by hand."""

import json

import pytest

from benchmarks.studies.goal_odds import main, odds_table, permutation_p_value, pooled_pass_rates, subset_pass_rates


def test_permutation_p_value_matches_scipy_exact_test():
    stats = pytest.importorskip("scipy.stats")
    first, second = [50.9, 61.0, 50.9, 55.2, 58.1, 53.3], [53.9, 61.0, 63.8, 52.4, 60.2, 57.7]
    expected = stats.permutation_test(
        (first, second), lambda x, y: sum(x) / len(x) - sum(y) / len(y), permutation_type="independent",
        alternative="two-sided", n_resamples=10**6).pvalue  # 924 splits: scipy enumerates them all
    assert permutation_p_value(first, second) == pytest.approx(expected, abs=1e-12)
    assert permutation_p_value([1.0, 2.0, 3.0], [4.0, 5.0, 6.0]) == pytest.approx(2 / 20)
    assert permutation_p_value([1.0, 2.0], [1.0, 2.0]) == 1.0


def test_past_the_enumeration_limit_random_draws_estimate_the_same_figures():
    first, second = [50.9, 61.0, 50.9, 55.2, 58.1, 53.3], [53.9, 61.0, 63.8, 52.4, 60.2, 57.7]
    exact = permutation_p_value(first, second)
    drawn = permutation_p_value(first, second, max_splits=100, draws=20_000)
    assert drawn != exact and drawn == pytest.approx(exact, abs=0.01)
    assert permutation_p_value([1.0] * 3, [9.0] * 3, max_splits=1, draws=999) == pytest.approx(2 / 20, abs=0.03)
    for rates in (subset_pass_rates, pooled_pass_rates):
        exact, drawn = rates(first, second), rates(first, second, max_splits=100, draws=20_000)
        assert drawn != exact and drawn == pytest.approx(exact, abs=0.015)


def test_subset_pass_rates_counted_by_hand():
    # The reference's triples: three hold the 10 (mean 3.3, kbert's 0 is too low), one does not.
    assert subset_pass_rates([0.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 10.0]) == (0.25, 1.0, 0.25)
    # kbert's triples with the 6 have std 3.5 against the reference's 0; only {0, 0, 0} passes the spread.
    assert subset_pass_rates([0.0, 0.0, 0.0, 6.0], [1.0, 1.0, 1.0, 1.0]) == (1.0, 0.25, 0.25)
    # The tolerance moves the mean goal: 0 against 1.5 fails at 1 point, passes at 2.
    assert subset_pass_rates([0.0, 0.0, 0.0], [1.5, 1.5, 1.5])[0] == 0.0
    assert subset_pass_rates([0.0, 0.0, 0.0], [1.5, 1.5, 1.5], tolerance=2.0)[0] == 1.0


def test_pooled_pass_rates_depend_on_the_pool_only():
    # k = 1: of the 12 ordered pairs, the 10 playing the reference against a 0 fails the mean goal.
    assert pooled_pass_rates([0.0, 0.0], [0.0, 10.0], k=1) == (0.75, 1.0, 0.75)
    a, b = [50.9, 61.0, 50.9, 55.2], [53.9, 61.0, 63.8, 52.4]
    swapped = [b[0], a[1], b[2], a[3]], [a[0], b[1], a[2], b[3]]
    assert pooled_pass_rates(a, b) == pooled_pass_rates(*swapped)
    assert pooled_pass_rates(a, b) != subset_pass_rates(a, b)


def _runs(task, size, kbert, reference):
    return [{"task": task, "size": size, "seed": seed, "framework": framework, "score": score}
            for framework, scores in (("kbert", kbert), ("reference", reference))
            for seed, score in enumerate(scores)]


def test_odds_table_rows_and_cli(tmp_path, capsys):
    runs = (_runs("SST-2", 500, [0.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 10.0])
            + _runs("SST-2", 1000, [70.0, 71.0, 72.0], [70.0, 71.0, 72.0]))  # 3 seeds: no row
    rows = odds_table(runs).splitlines()
    assert len(rows) == 3
    cells = [c.strip() for c in rows[2].strip("|").split("|")]
    assert cells[:7] == ["SST-2", "500", "4 / 4", "0.0 ± 0.0", "2.5 ± 5.0", "-2.5", "1.00"]
    assert cells[7:] == ["**no** / yes", "25% / 100% / 25%",
                         " / ".join(f"{r:.0%}" for r in pooled_pass_rates([0.0] * 4, [0.0] * 3 + [10.0]))]
    path = tmp_path / "runs.json"
    path.write_text(json.dumps(runs), encoding="utf-8")
    main(["--json", str(path)])
    assert capsys.readouterr().out == odds_table(runs)
