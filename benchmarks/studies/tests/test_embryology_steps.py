"""How `benchmarks/studies/embryology.py` numbers the checkpoints of a run in phases."""

import pytest

from benchmarks.studies.embryology import checkpoint_steps


def test_a_later_phase_continues_from_the_last_step_of_the_one_before(tmp_path):
    for phase, steps in (("phase1", (500, 1000, 1500)), ("phase2", (500, 1000))):
        (tmp_path / phase).mkdir()
        for step in steps:
            (tmp_path / phase / f"ckpt-{step}.weights.h5").write_bytes(b"")
    found = checkpoint_steps([str(tmp_path / "phase1" / "ckpt-*.weights.h5"),
                              str(tmp_path / "phase2" / "ckpt-*.weights.h5")])
    assert [step for _, step in found] == [500, 1000, 1500, 2000, 2500]
    assert found[3][0].endswith("phase2/ckpt-500.weights.h5")
    # Numeric order, not the glob's text order (ckpt-1000 sorts before ckpt-500 as text).
    assert [step for _, step in checkpoint_steps([str(tmp_path / "phase1" / "*.h5")])] == [500, 1000, 1500]


def test_a_phase_without_checkpoints_is_an_error_that_names_its_glob(tmp_path):
    with pytest.raises(SystemExit, match="no checkpoint matches .*empty"):
        checkpoint_steps([str(tmp_path / "empty" / "ckpt-*.weights.h5")])


def test_a_phase_that_ran_past_its_last_checkpoint_shifts_the_next_by_its_whole_length(tmp_path):
    # The run wrote history.json beside checkpoints/: 2,440 steps, the last checkpoint at 2,000.
    for phase, steps in (("model_phase1", (1000, 2000)), ("model", (500,))):
        (tmp_path / phase / "checkpoints").mkdir(parents=True)
        for step in steps:
            (tmp_path / phase / "checkpoints" / f"ckpt-{step}.weights.h5").write_bytes(b"")
    (tmp_path / "model_phase1" / "history.json").write_text('{"steps": 2440}')
    found = checkpoint_steps([str(tmp_path / p / "checkpoints" / "ckpt-*.weights.h5") for p in ("model_phase1", "model")])
    assert [step for _, step in found] == [1000, 2000, 2940]
