"""benchmarks/studies/embedding_speed.py: its texts, its cells, and its smallest run (the shipped MiniLM on eight
sentences; no timing is checked)."""

import pathlib
import re
import subprocess
import sys

import numpy as np
import pytest

from benchmarks.studies.embedding_speed import CELLS, LABELS, padded_tokens, read_texts

ROOT = pathlib.Path(__file__).resolve().parents[3]


def test_texts_are_the_first_sst2_sentences_or_generated_ones(tmp_path):
    tsv = tmp_path / "train.tsv"
    tsv.write_text('sentence\tlabel\nit \'s a "charming" film \t1\ndull\t0\na slow , moving story\t1\n',
                   encoding="utf-8")
    texts, source = read_texts(str(tsv), 2)
    assert texts == ['it \'s a "charming" film ', "dull"] and "SST-2" in source
    assert read_texts(str(tsv), 3, sort_by_length=True)[0] == ['it \'s a "charming" film ', "a slow , moving story",
                                                               "dull"]
    generated, source = read_texts(str(tmp_path / "absent.tsv"), 50)
    assert len(generated) == 50 and "generated" in source
    assert generated == read_texts(str(tmp_path / "absent.tsv"), 50)[0]  # the same texts in every process
    assert len({len(t.split()) for t in generated}) > 10


def test_padded_tokens_pads_each_batch_to_its_longest():
    assert padded_tokens(np.array([3, 5, 2, 2, 9]), 2) == pytest.approx((5 * 2 + 2 * 2 + 9) / 5)


def test_cells_are_kbert_against_sentence_transformers():
    assert [CELLS[c] for c in ("st", "st_bf16_per_core")] == [("st", "float32", False), ("st", "bfloat16", True)]
    assert LABELS["kbert_per_core"] == "kbert SavedModel, float32, one batch per core (`kbert predict`'s threads)"
    assert LABELS["st_bf16"] == "sentence-transformers `encode`, bf16 autocast"


@pytest.mark.slow
def test_embedding_speed_smallest_run(minilm, tmp_path):
    pytest.importorskip("sentence_transformers")
    done = subprocess.run([sys.executable, "-m", "benchmarks.studies.embedding_speed", "--model-dir", str(minilm),
                           "--data", str(tmp_path / "absent.tsv"), "--variants", "kbert,st_per_core",
                           "--texts", "8", "--batch-size", "4", "--steps", "1", "--rounds", "1"],
                          capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "kbert's best / sentence-transformers' best" in done.stdout
    rows = [line for line in done.stdout.splitlines() if line.startswith(("| kbert SavedModel",
                                                                           "| sentence-transformers"))]
    assert len(rows) == 2 and all(float(row.split("|")[2]) > 0 for row in rows)
    difference = re.search(r"sentence-transformers, float32: ([0-9.]+e[+-][0-9]+)", done.stdout)
    assert float(difference.group(1)) <= 1e-5
