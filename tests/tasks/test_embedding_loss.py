"""MultipleNegativesRankingLoss: against the formula in PyTorch and sentence-transformers' own loss, and one
training step under a 2-replica MirroredStrategy against one device on the same global batch."""

import json
import subprocess
import sys

import numpy as np
import pytest

from kbert.tasks.embedding_loss import MultipleNegativesRankingLoss
from tests.training._training_subprocess import ROOT, result, worker_env

BATCH, DIM = 6, 8


def rows(group_size: int, seed: int = 0) -> np.ndarray:
    """`(BATCH * group_size, DIM)` embeddings, not unit length (the loss takes cosines), an example's rows
    together: anchor, positive, negatives."""
    return np.random.default_rng(seed).normal(size=(BATCH * group_size, DIM)).astype("float32") * 2


def torch_loss(embeddings: np.ndarray, group_size: int, scale: float, symmetric: bool) -> float:
    """The loss written out in torch ops: cosines of each anchor with all positives then all negatives."""
    torch = pytest.importorskip("torch")
    import torch.nn.functional as F

    groups = F.normalize(torch.tensor(embeddings, dtype=torch.float64), dim=-1).reshape(BATCH, group_size, DIM)
    anchors, candidates = groups[:, 0], torch.cat([groups[:, i] for i in range(1, group_size)])
    targets = torch.arange(BATCH)
    loss = F.cross_entropy(scale * anchors @ candidates.T, targets)
    if symmetric:
        loss = (loss + F.cross_entropy(scale * groups[:, 1] @ anchors.T, targets)) / 2
    return float(loss)


def sentence_transformers_loss(embeddings: np.ndarray, group_size: int, scale: float, symmetric: bool) -> float:
    torch = pytest.importorskip("torch")
    losses = pytest.importorskip("sentence_transformers.sentence_transformer.losses")
    directions = ("query_to_doc", "doc_to_query") if symmetric else ("query_to_doc",)
    loss = losses.MultipleNegativesRankingLoss(None, scale=scale, directions=directions,
                                               partition_mode="per_direction")
    groups = torch.tensor(embeddings).reshape(BATCH, group_size, DIM)
    return float(loss.compute_loss_from_embeddings([groups[:, i] for i in range(group_size)], None))


@pytest.mark.parametrize("group_size,scale,symmetric", [(2, 20.0, False), (3, 20.0, False), (2, 7.0, True),
                                                        (4, 20.0, True)])
def test_loss_equals_the_formula_in_pytorch(group_size, scale, symmetric):
    embeddings = rows(group_size)
    labels = np.zeros(len(embeddings))
    exact = float(MultipleNegativesRankingLoss(scale, symmetric, group_size, dtype="float64")(labels, embeddings))
    assert exact == pytest.approx(torch_loss(embeddings, group_size, scale, symmetric), abs=1e-6)
    # Training's float32 (logits up to `scale` keep about 6 digits) and sentence-transformers' own loss.
    ours = float(MultipleNegativesRankingLoss(scale, symmetric, group_size)(labels, embeddings))
    assert ours == pytest.approx(exact, abs=1e-5)
    assert ours == pytest.approx(sentence_transformers_loss(embeddings, group_size, scale, symmetric), abs=1e-5)


def test_the_rows_are_read_by_example():
    """Swapping two examples' rows whole changes nothing; swapping an anchor with a positive does."""
    loss = MultipleNegativesRankingLoss(group_size=3)
    embeddings = rows(3)
    order = np.r_[3:6, 0:3, 6:len(embeddings)]
    assert float(loss(0, embeddings[order])) == pytest.approx(float(loss(0, embeddings)), abs=1e-6)
    mixed = embeddings[np.r_[1, 0, 2:len(embeddings)]]
    assert abs(float(loss(0, mixed)) - float(loss(0, embeddings))) > 1e-3


def test_rows_that_are_not_whole_groups_are_an_error():
    with pytest.raises(Exception, match="not whole groups of 3"):
        MultipleNegativesRankingLoss(group_size=3)(np.zeros(4), rows(2)[:4])
    with pytest.raises(ValueError, match="group_size must be at least 2"):
        MultipleNegativesRankingLoss(group_size=1)


def test_config_round_trip():
    loss = MultipleNegativesRankingLoss(7.5, True, 3)
    again = MultipleNegativesRankingLoss.from_config(json.loads(json.dumps(loss.get_config())))
    assert (again.scale, again.symmetric, again.group_size) == (7.5, True, 3)


@pytest.mark.slow
def test_two_replicas_train_as_one_device_on_the_same_global_batch(tmp_path):
    process = subprocess.run([sys.executable, "-m", "tests.tasks._mirrored_ranking_step"], cwd=ROOT,
                             env=worker_env(), capture_output=True, text=True, timeout=600)
    log = tmp_path / "worker.log"
    log.write_text(process.stdout + process.stderr)
    got = result(log)
    assert got["replicas"] == 2
    assert got["two_loss"] == pytest.approx(got["one_loss"], abs=1e-6)
    # One SGD step (rate 1) moved the weights by up to `update`; the two runs agree to float rounding.
    assert got["update"] > 0.1 and got["weight_difference"] < 1e-5
    # Each replica scores its own anchors against every replica's candidates: their mean is the batch's loss,
    # which the halves scored apart (each against its own candidates only) are not.
    assert np.mean(got["replica_losses_after"]) == pytest.approx(got["one_loss_after"], abs=1e-6)
    assert abs(got["replica_losses_after"][0] - got["replica_losses_after"][1]) > 1e-4
    assert abs(np.mean(got["halves_alone_after"]) - got["one_loss_after"]) > 0.1
