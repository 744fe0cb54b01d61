"""`kbert finetune embed` -> `kbert evaluate` -> `kbert export` -> `kbert predict` on tiny pairs, and the model
directory read by sentence-transformers."""

import json
import random

import numpy as np
import pytest

import kbert
from kbert.cli.main import main
from tests.training.conftest import FILLER, write_tsv

KEYWORDS = ["cat", "dog", "mat", "good", "bad", "un", "sat", "ran"]


def rows(n: int, seed: int, score: bool = False) -> list[tuple[str, ...]]:
    """(anchor, positive, negative[, score]): the positive shares the anchor's keyword, the negative has another."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        key, other = rng.sample(KEYWORDS, 2)
        anchor = " ".join(rng.choices(FILLER, k=3) + [key])
        positive = " ".join([key] + rng.choices(FILLER, k=rng.randint(1, 4)))
        negative = " ".join(rng.choices(FILLER, k=2) + [other])
        out.append((anchor, positive, negative) + ((f"{rng.uniform(0, 5):.2f}",) if score else ()))
    return out


@pytest.mark.slow
def test_finetune_evaluate_export_predict(tmp_path, tiny_init, capsys):
    train = write_tsv(tmp_path / "train.tsv", ["query", "doc", "neg"], rows(96, 0))
    dev = write_tsv(tmp_path / "dev.tsv", ["query", "doc", "neg"], rows(24, 1))
    sts = write_tsv(tmp_path / "sts.tsv", ["query", "doc", "neg", "score"], rows(24, 2, score=True))
    out = tmp_path / "embed_model"
    assert main(["finetune", "embed", "--init", str(tiny_init), "--train", str(train), "--validation", str(dev),
                 "--text-column", "query", "--text-pair-column", "doc", "--negative-column", "neg",
                 "--symmetric", "--scale", "10", "--sequence-length", "16", "--epochs", "3", "--batch-size", "16",
                 "--learning-rate", "1e-3", "--out", str(out), "--verbose", "0", "--mixed-precision", "none"]) == 0
    metrics = json.loads((out / "metrics.json").read_text())
    assert set(metrics) == {"recall@1", "recall@10", "mrr@10", "ndcg@10", "num_examples"}
    assert metrics["num_examples"] == 24 and 0 < metrics["recall@1"] <= metrics["recall@10"] <= 1
    losses = json.loads((out / "history.json").read_text())["epochs"]["loss"]
    assert losses[-1] < losses[0]  # it learns
    model = kbert.load_model(out)
    assert isinstance(model, kbert.BertSentenceEmbedder)
    assert (model.task.negative_column, model.task.symmetric, model.task.scale) == ("neg", True, 10.0)

    # Scores of another file: STS correlation with its score column.
    capsys.readouterr()
    assert main(["evaluate", str(out), "--input", str(sts), "--label-column", "score", "--verbose", "0"]) == 0
    assert set(json.loads(capsys.readouterr().out)) == {"spearman", "pearson", "num_examples"}

    exported = tmp_path / "export"
    assert main(["export", str(out), "--out", str(exported)]) == 0  # TFLite: tests/tasks/test_embedding_minilm.py
    texts = ["the cat sat on the mat", "a good dog"]
    want = model.predict_on_batch(model.preprocessor(texts))
    capsys.readouterr()
    assert main(["predict", str(exported), *texts]) == 0
    answers = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [sorted(a) for a in answers] == [["embedding"]] * 2
    np.testing.assert_allclose([a["embedding"] for a in answers], want, atol=1e-5)
    np.testing.assert_allclose(np.linalg.norm(want, axis=-1), 1.0, atol=1e-5)


def test_a_batch_larger_than_the_data_is_an_error(tmp_path, tiny_init, capsys):
    train = write_tsv(tmp_path / "train.tsv", ["text", "text_pair"], [r[:2] for r in rows(5, 3)])
    code = main(["finetune", "embed", "--init", str(tiny_init), "--train", str(train), "--batch-size", "8",
                 "--out", str(tmp_path / "out"), "--verbose", "0"])
    assert code == 1
    assert "5 examples are fewer than one batch of 8" in capsys.readouterr().err


def test_feature_based_is_refused(tmp_path, tiny_init, capsys):
    train = write_tsv(tmp_path / "train.tsv", ["text", "text_pair"], [r[:2] for r in rows(8, 4)])
    code = main(["finetune", "embed", "--init", str(tiny_init), "--train", str(train), "--batch-size", "4",
                 "--feature-based",
                 "--out", str(tmp_path / "out"), "--verbose", "0"])
    assert code == 1 and "nothing to train" in capsys.readouterr().err
