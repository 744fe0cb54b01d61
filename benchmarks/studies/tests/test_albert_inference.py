"""benchmarks/studies/albert_inference.py: its inputs, and its smallest run (a tiny ALBERT; no timing is
checked)."""

import pathlib
import subprocess
import sys

import numpy as np
import pytest

from benchmarks.studies.albert_inference import CELLS, LABELS, token_batch

ROOT = pathlib.Path(__file__).resolve().parents[3]


def run(*argv: str) -> str:
    done = subprocess.run([sys.executable, "-m", *argv], capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def test_token_batch_is_albert_sentence_pairs_without_padding():
    batch = token_batch(4, 12)
    assert {name: value.shape for name, value in batch.items()} == {name: (4, 12) for name in batch}
    for ids, segments in zip(batch["token_ids"], batch["segment_ids"]):
        split = int(np.flatnonzero(ids == 3)[0])  # [SEP] after the first sentence
        assert ids[0] == 2 and ids[-1] == 3 and 0 < split < 11
        assert segments.tolist() == [0] * (split + 1) + [1] * (11 - split)
    assert batch["padding_mask"].all()
    np.testing.assert_array_equal(token_batch(4, 12)["token_ids"], batch["token_ids"])  # the same ids each call


def test_cells_are_kbert_against_transformers():
    assert [CELLS[c] for c in ("torch", "torch_bf16_per_core")] == [("torch", "float32", False),
                                                                     ("torch", "bfloat16", True)]
    assert LABELS["kbert_bf16"] == "kbert AlbertEncoder, tf.function, bfloat16 (the export's mixed_bfloat16)"
    assert LABELS["torch_bf16_per_core"] == "transformers, bf16 autocast, one batch per core"


@pytest.mark.slow
def test_albert_inference_smallest_run(tmp_path):
    import torch
    import transformers

    torch.manual_seed(0)
    config = transformers.AlbertConfig(vocab_size=30000, embedding_size=8, hidden_size=16, num_hidden_layers=2,
                                       num_attention_heads=2, intermediate_size=32)
    transformers.AlbertModel(config).save_pretrained(tmp_path)
    out = run("benchmarks.studies.albert_inference", "--checkpoint", str(tmp_path), "--variants", "kbert,torch",
              "--batch-size", "2", "--sequence-length", "8", "--steps", "1", "--rounds", "1")
    assert "kbert's best / transformers' best" in out
    rows = [line for line in out.splitlines() if line.startswith("| kbert AlbertEncoder") or
            line.startswith("| transformers AlbertModel")]
    assert len(rows) == 2 and all(float(row.split("|")[2]) > 0 for row in rows)
    float32_diff = float(out.split("float32: ")[1].split(";")[0])
    assert float32_diff < 1e-5
