"""Shared helpers for the fine-tuning tests: a tiny random checkpoint directory and synthetic data."""

import pathlib
import random

import pytest

from tests.conftest import TINY_VOCAB

FILLER = ["the", "cat", "sat", "on", "mat", "dog", "ran", "a", ".", ","]


@pytest.fixture
def tiny_init(tmp_path: pathlib.Path) -> pathlib.Path:
    """A kbert checkpoint directory (random 2-layer encoder + the tiny vocabulary) that --init accepts."""
    import kbert

    encoder = kbert.BertEncoder(vocab_size=len(TINY_VOCAB), hidden_size=32, num_hidden_layers=2,
                                num_attention_heads=2, intermediate_size=64, max_position_embeddings=128)
    directory = tmp_path / "init"
    kbert.save_pretrained(encoder, directory, vocabulary=TINY_VOCAB)
    return directory


def keyword_rows(n: int, seed: int) -> list[tuple[str, str]]:
    """(sentence, label): label 1 when "good" is in the sentence, 0 when "bad" is."""
    rng = random.Random(seed)
    rows = []
    for _ in range(n):
        words = rng.choices(FILLER, k=rng.randint(2, 8))
        label = rng.randint(0, 1)
        words.insert(rng.randint(0, len(words)), "good" if label else "bad")
        rows.append((" ".join(words), str(label)))
    return rows


def write_tsv(path: pathlib.Path, header: list[str], rows) -> pathlib.Path:
    path.write_text("\t".join(header) + "\n" + "".join("\t".join(r) + "\n" for r in rows), encoding="utf-8")
    return path
