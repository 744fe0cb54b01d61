"""How `benchmarks/studies/pretrain_quality.py` shares `--minutes` among a recipe's phases."""

from types import SimpleNamespace

import pytest

from benchmarks.studies.pretrain_quality import phase_budgets


def test_phases_share_the_time_by_their_guards_and_scale_their_steps():
    recipes = [SimpleNamespace(steps=6000, max_minutes=14), SimpleNamespace(steps=10000, max_minutes=44)]
    assert phase_budgets(recipes, 58, seconds_per_step=0.25) == [(14.0, 6000), (44.0, 10000)]
    (short, short_steps), (long, long_steps) = phase_budgets(recipes, 10, seconds_per_step=0.25)
    assert short == pytest.approx(10 * 14 / 58) and long == pytest.approx(10 * 44 / 58)
    assert short_steps == int(6000 * short / 14) and long_steps == int(10000 * long / 44)


def test_a_recipe_without_a_guard_is_sized_by_seconds_per_step():
    recipes = [SimpleNamespace(steps=1000, max_minutes=None)] * 2
    assert phase_budgets(recipes, 1, seconds_per_step=1.0) == [(0.5, 30), (0.5, 30)]
    assert phase_budgets(recipes[:1], 0.01, seconds_per_step=1.0) == [(0.01, 10)]  # at least 10 steps


def test_timed_phases_fill_their_share_whatever_their_recipes_say():
    recipes = [SimpleNamespace(steps=6000, max_minutes=12), SimpleNamespace(steps=15500, max_minutes=48)]
    # A machine whose steps take 0.12 and 0.24 s: 95% of 12 and 48 minutes, not the files' 6,000 and 15,500.
    (short, short_steps), (long, long_steps) = phase_budgets(recipes, 60, seconds_per_step=[0.12, 0.24])
    assert (short, long) == (12.0, 48.0)
    assert short_steps == pytest.approx(5700, abs=1) and long_steps == pytest.approx(11400, abs=1)
    # Twice as fast: twice the steps, the same minutes.
    faster = phase_budgets(recipes, 60, seconds_per_step=[0.06, 0.12])
    assert [minutes for minutes, _ in faster] == [12.0, 48.0]
    assert [steps for _, steps in faster] == pytest.approx([11400, 22800], abs=1)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_committed_recipes_load_and_fit_the_hour(lang):
    from benchmarks.studies.pretrain_quality import LANGUAGES, REPO
    from kbert.training.pretrain_config import PretrainConfig

    recipes = [PretrainConfig.from_file(REPO / "recipes" / name, train="data", out="out")
               for name in LANGUAGES[lang]["recipes"]]
    for recipe in recipes:
        recipe.validate()  # the settings a user's command adds are the data and the output directory
    assert sum(r.max_minutes for r in recipes) <= 60
    lengths = [r.sequence_length for r in recipes]
    assert lengths == sorted(lengths) and lengths[-1] == 128  # short sequences first, BERT's length last
    assert all(r.objective == "none" and r.preset == recipes[-1].preset for r in recipes)  # one model, masked LM
