"""The wall-clock callbacks: `TimeLimit` stops a run on time, `StepClock` times a step after tracing."""

import types

import pytest

import kbert.training.time_callbacks as time_callbacks
from kbert.training.time_callbacks import StepClock, TimeLimit


def fake_clock(monkeypatch, *readings):
    ticks = iter(readings)
    monkeypatch.setattr(time_callbacks.time, "monotonic", lambda: next(ticks))


def test_step_clock_leaves_out_the_first_batch_and_counts_optimizer_steps(monkeypatch):
    # The first batch ends at 10 s (tracing); the next three take 1, 1 and 4 s (the last with an evaluation).
    fake_clock(monkeypatch, 10.0, 11.0, 12.0, 16.0)
    clock = StepClock(batches_per_step=2)  # two batches an optimizer step (gradient accumulation)
    assert clock.seconds_per_step is None
    for batch in range(4):
        clock.on_train_batch_end(batch)
    assert clock.seconds_per_step == pytest.approx((16.0 - 10.0) / 3 * 2)


def test_time_limit_stops_training_at_the_first_batch_past_the_budget(monkeypatch):
    # Training begins at 100 s; batches end at 130 s, 159.9 s and 160 s; the budget is one minute.
    fake_clock(monkeypatch, 100.0, 130.0, 159.9, 160.0)
    limit = TimeLimit(minutes=1.0)
    limit.set_model(types.SimpleNamespace(stop_training=False))
    assert limit.seconds == 60.0
    limit.on_train_batch_end(0)  # before on_train_begin: no clock yet, never stops
    assert not limit.model.stop_training
    limit.on_train_begin()
    stopped = []
    for batch in range(3):
        limit.on_train_batch_end(batch)
        stopped.append(limit.model.stop_training)
    assert stopped == [False, False, True]
