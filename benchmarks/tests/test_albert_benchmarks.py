"""`benchmarks/pretraining.py --model albert`: its inputs, and its smallest run (a tiny ALBERT; no timing is
checked)."""

import pathlib
import subprocess
import sys

import numpy as np
import pytest

from benchmarks.pretraining import make_batches

ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_albert_pretraining_batches_use_albert_ids():
    batch = make_batches(1, 3, 16, 4, family="albert", preset="tiny")[0]
    ids, weights = batch["token_ids"], batch["masked_weights"]
    assert (ids[:, 0] == 2).all() and ids.max() < 30000  # [CLS], ALBERT's vocabulary
    rows, cols = np.nonzero(weights)
    masked = ids[rows, batch["masked_positions"][rows, cols]]
    assert (masked == 4).any()  # 80% of the masked positions hold [MASK]
    assert not np.isin(batch["masked_ids"][rows, cols], [2, 3, 4]).any()  # special tokens are never predicted


def run(*argv: str) -> str:
    done = subprocess.run([sys.executable, "-m", *argv], capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


@pytest.mark.slow
def test_albert_pretraining_smallest_run():
    out = run("benchmarks.pretraining", "--model", "albert", "--preset", "tiny", "--batch-size", "2",
              "--sequence-length", "16", "--max-predictions", "3", "--rounds", "1", "--steps", "1",
              "--only", "(tf.function),HF", "--no-write")
    assert "Best kbert / keras-hub's best" in out and "trains MLM + SOP" in out
    rows = {line.split("|")[1].strip(): float(line.split("|")[2]) for line in out.splitlines()
            if line.startswith(("| kbert", "| keras-hub", "| HF"))}
    assert set(rows) == {"kbert BertPretrainer (tf.function)", "keras-hub AlbertMaskedLM (tf.function)",
                         "HF PyTorch AlbertForPreTraining"}
    assert all(rate > 0 for rate in rows.values())
