"""LinearWarmupLinearDecay against hand-computed values."""

import keras
import numpy as np
import pytest

from kbert.optim.schedules import LinearWarmupLinearDecay


@pytest.mark.parametrize(
    "step, expected",
    [
        (0, 0.0),  # warmup starts at 0
        (5, 5e-4),  # 1e-3 * 5 / 10
        (9, 9e-4),  # last warmup step: 1e-3 * 9 / 10
        (10, 9e-4),  # decay measured from step 0: 1e-3 * (1 - 10 / 100)
        (55, 4.5e-4),  # 1e-3 * (1 - 55 / 100)
        (99, 1e-5),
        (100, 0.0),  # end
        (250, 0.0),  # stays at 0 past the end
    ],
)
def test_schedule_values(step, expected):
    schedule = LinearWarmupLinearDecay(1e-3, num_train_steps=100, warmup_steps=10)
    assert float(schedule(step)) == pytest.approx(expected, abs=1e-9)


def test_no_warmup_starts_at_peak():
    schedule = LinearWarmupLinearDecay(2e-5, num_train_steps=4, warmup_steps=0)
    values = [float(schedule(s)) for s in range(5)]
    np.testing.assert_allclose(values, [2e-5, 1.5e-5, 1e-5, 5e-6, 0.0], atol=1e-12)


def test_accumulation_counts_updates_not_batches():
    schedule = LinearWarmupLinearDecay(1e-3, 100, 10, gradient_accumulation_steps=4)
    # iterations 20..23 are the micro-batches of update 5
    for iteration in (20, 21, 23):
        assert float(schedule(iteration)) == pytest.approx(5e-4, abs=1e-9)
    assert float(schedule(24)) == pytest.approx(6e-4, abs=1e-9)


def test_config_round_trip_and_serialization():
    schedule = LinearWarmupLinearDecay(3e-4, 50, 5, gradient_accumulation_steps=2)
    assert schedule.get_config() == {
        "learning_rate": 3e-4, "num_train_steps": 50, "warmup_steps": 5,
        "gradient_accumulation_steps": 2,
    }
    restored = keras.optimizers.schedules.deserialize(keras.optimizers.schedules.serialize(schedule))
    assert isinstance(restored, LinearWarmupLinearDecay)
    for step in (0, 7, 33, 60):
        assert float(restored(step)) == float(schedule(step))


def test_optimizer_with_schedule_round_trips():
    optimizer = keras.optimizers.AdamW(learning_rate=LinearWarmupLinearDecay(1e-3, 100, 10))
    restored = keras.optimizers.AdamW.from_config(optimizer.get_config())
    assert isinstance(restored._learning_rate, LinearWarmupLinearDecay)
    assert restored._learning_rate.get_config() == optimizer._learning_rate.get_config()


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(learning_rate=0.0, num_train_steps=10), "learning_rate"),
        (dict(learning_rate=1e-3, num_train_steps=0), "num_train_steps"),
        (dict(learning_rate=1e-3, num_train_steps=10, warmup_steps=11), "warmup_steps"),
        (dict(learning_rate=1e-3, num_train_steps=10, gradient_accumulation_steps=0),
         "gradient_accumulation_steps"),
    ],
)
def test_bad_arguments_name_the_problem(kwargs, match):
    with pytest.raises(ValueError, match=match):
        LinearWarmupLinearDecay(**kwargs)
