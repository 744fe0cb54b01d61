"""The intermediate-layer losses of a distillation (TinyBERT's hidden states, MiniLM's attention) against numpy on
padded batches, zero for a student that is its teacher, `kbert distill --hidden-weight --attention-weight` end to
end, and their refusals."""

import json

import keras
import numpy as np
import pytest
import tensorflow as tf

import kbert
from kbert.cli.main import main
from kbert.training.distiller import Distiller
from kbert.training.layer_losses import uniform_layer_map
from kbert.training.student import build_student
from tests.training.test_distill import batch, classifier, data_dir, error_of, teacher_dir  # noqa: F401 (fixtures)

TASK = kbert.ClassificationTask(labels=["0", "1"])
ALBERT = {"embedding_size": 8, "num_hidden_groups": 1, "inner_group_num": 2}


def probed(model: keras.Model, inputs: dict) -> dict:
    """The encoder's hidden states and attention probabilities as numpy, fetched straight from `probe`."""
    inside = model.encoder.probe(inputs, training=False)
    return {"hidden_states": [h.numpy().astype(np.float64) for h in inside["hidden_states"]],
            "attention_probs": [p.numpy().astype(np.float64) for p in inside["attention_probs"]]}


def sharpen_attention(model: keras.Model, factor: float = 30.0) -> None:
    """Scales every query kernel: a fresh encoder attends almost uniformly, and its KLs are near rounding."""
    for blocks in model.encoder.layer_blocks():
        for block in blocks:
            query = block._self_attention_layer._query_dense
            query.kernel.assign(query.kernel * factor)


def test_uniform_layer_map():
    assert uniform_layer_map(12, 4) == [2, 5, 8, 11] and uniform_layer_map(4, 2) == [1, 3]
    assert uniform_layer_map(3, 3) == [0, 1, 2] and uniform_layer_map(5, 1) == [4]


# -- (a) the hidden-state loss --------------------------------------------------------------------------------
@pytest.mark.parametrize("family, fields", [(kbert.BertEncoder, {}), (kbert.AlbertEncoder, ALBERT)])
def test_hidden_loss_is_masked_mse_of_projected_states(family, fields):
    teacher, student = classifier(3, 0, family, **fields), classifier(2, 1, family, hidden_size=8, **fields)
    distiller = Distiller(teacher, student, TASK, alpha=1.0, hidden_weight=1.0)
    rng = np.random.default_rng(0)
    for projection in distiller.projections:  # not the identity: the projection is part of the measure
        projection.set_weights([rng.normal(size=w.shape).astype(np.float32) for w in projection.get_weights()])
    inputs = batch()
    mask = inputs["padding_mask"].numpy().astype(np.float64)
    assert 0 < mask.sum() < mask.size  # padded rows
    got = float(distiller.distillation_step(inputs, np.zeros(3, np.int32), tf.ones([3]), training=False)["hidden_loss"])

    mine, theirs = probed(student, inputs)["hidden_states"], probed(teacher, inputs)["hidden_states"]
    (w_e, b_e), (w_h, b_h) = [[w.astype(np.float64) for w in p.get_weights()] for p in distiller.projections]
    assert distiller.layer_map == [0, 2]  # (m + 1) * 3 // 2 - 1
    pairs = [(mine[0] @ w_e + b_e, theirs[0])]
    pairs += [(mine[m + 1] @ w_h + b_h, theirs[g + 1]) for m, g in enumerate([0, 2])]
    squares = [((s - t) ** 2).mean(-1) for s, t in pairs]  # (batch, seq) each
    want = np.mean([(e * mask).sum() / mask.sum() for e in squares])
    assert got == pytest.approx(want, rel=1e-4)
    assert got != pytest.approx(np.mean([e.mean() for e in squares]), rel=1e-3)  # the padding is left out


# -- (b) the attention loss -----------------------------------------------------------------------------------
@pytest.mark.parametrize("family, fields", [(kbert.BertEncoder, {}), (kbert.AlbertEncoder, ALBERT)])
def test_attention_loss_is_kl_over_real_tokens(family, fields):
    teacher, student = classifier(2, 0, family, **fields), classifier(1, 1, family, **fields)
    for model in (teacher, student):
        sharpen_attention(model)
    distiller = Distiller(teacher, student, TASK, alpha=1.0, attention_weight=1.0)
    inputs = batch()
    got = float(distiller.distillation_step(inputs, np.zeros(3, np.int32), tf.ones([3]),
                                            training=False)["attention_loss"])
    # The student's last layer against the teacher's last (the uniform map); ALBERT's layer ends at its 2nd block.
    t, s = probed(teacher, inputs)["attention_probs"][-1], probed(student, inputs)["attention_probs"][-1]
    mask = inputs["padding_mask"].numpy().astype(bool)
    kls = []
    for row in range(mask.shape[0]):
        real = np.flatnonzero(mask[row])
        p, q = t[row][:, real][:, :, real], s[row][:, real][:, :, real]  # (heads, real query, real key)
        kls.append((p * (np.log(p) - np.log(q))).sum(-1).ravel())
    want = np.concatenate(kls).mean()
    assert want > 1e-3 and got == pytest.approx(want, rel=1e-4)


# -- (c) a student that is its teacher ------------------------------------------------------------------------
@pytest.mark.parametrize("family, fields", [(kbert.BertEncoder, {}), (kbert.AlbertEncoder, ALBERT),
                                            (kbert.RobertaEncoder, {})])
def test_the_teacher_as_student_loses_nothing(family, fields):
    teacher = classifier(2, 0, family, **fields)
    student, origin = build_student(teacher, TASK, layers=2)
    sharpen_attention(teacher)
    sharpen_attention(student)
    distiller = Distiller(teacher, student, TASK, alpha=1.0, hidden_weight=1.0, attention_weight=1.0,
                          layer_map=origin["layers"])
    losses = distiller.distillation_step(batch(), np.zeros(3, np.int32), tf.ones([3]), training=False)
    assert float(losses["hidden_loss"]) == pytest.approx(0.0, abs=1e-6)
    assert float(losses["attention_loss"]) == pytest.approx(0.0, abs=1e-6)
    assert float(losses["distillation_loss"]) == pytest.approx(0.0, abs=1e-6)


def test_fit_trains_student_and_projections_and_logs_the_losses():
    teacher, student = classifier(2, 0), classifier(1, 1, hidden_size=8)
    before_teacher = [w.copy() for w in teacher.get_weights()]
    distiller = Distiller(teacher, student, TASK, hidden_weight=1.0)
    before = [w.copy() for p in distiller.projections for w in p.get_weights()]
    distiller.compile(optimizer=keras.optimizers.SGD(0.1))
    data = tf.data.Dataset.from_tensors((batch(), np.array([1, 0, 1], np.int32))).repeat(3)
    history = distiller.fit(data, epochs=2, verbose=0, shuffle=False).history
    assert "hidden_loss" in history and "attention_loss" not in history
    assert history["hidden_loss"][1] < history["hidden_loss"][0]
    after = [w for p in distiller.projections for w in p.get_weights()]
    assert any(not np.allclose(a, b) for a, b in zip(before, after))
    assert all(np.array_equal(a, b) for a, b in zip(before_teacher, teacher.get_weights()))
    plain = Distiller(teacher, student, TASK)
    assert [m.name for m in plain.metrics] == ["loss", "distillation_loss", "label_loss"]


# -- (d) the command ------------------------------------------------------------------------------------------
@pytest.mark.slow  # fine-tunes its teacher, then a whole `kbert distill`: about 30 s
def test_cli_hidden_and_attention_losses(teacher_dir, data_dir, tmp_path):  # noqa: F811
    out = tmp_path / "inner"
    assert main(["distill", "classify", "--teacher", str(teacher_dir), "--out", str(out), "--train",
                 str(data_dir / "train.tsv"), "--student-layers", "2", "--hidden-weight", "1", "--attention-weight",
                 "1", "--sequence-length", "16", "--epochs", "1", "--batch-size", "32", "--verbose", "0",
                 "--mixed-precision", "none"]) == 0
    history = json.loads((out / "history.json").read_text())["epochs"]
    assert history["hidden_loss"][0] > 0 and history["attention_loss"][0] >= 0
    record = json.loads((out / "distillation.json").read_text())
    assert (record["hidden_weight"], record["attention_weight"], record["layer_map"]) == (1.0, 1.0, [0, 2])
    student = kbert.load_model(out)
    fresh, _ = build_student(kbert.load_model(teacher_dir), TASK, layers=2)
    assert sorted(w.path for w in student.weights) == sorted(w.path for w in fresh.weights)
    assert not any("to_teacher" in w.path for w in student.weights)


# -- (e) refusals ---------------------------------------------------------------------------------------------
def test_refusals(teacher_dir, data_dir, tmp_path, capsys):  # noqa: F811
    for name in ("hidden_weight", "attention_weight"):
        with pytest.raises(ValueError, match=f"{name} must be >= 0, got -0.5"):
            Distiller(classifier(1, 0), classifier(1, 1), TASK, **{name: -0.5})
    with pytest.raises(ValueError, match="the student has 4 attention heads, the teacher 2"):
        Distiller(classifier(2, 0), classifier(1, 1, num_attention_heads=4), TASK, attention_weight=1.0)
    with pytest.raises(ValueError, match="layer map"):
        Distiller(classifier(2, 0), classifier(1, 1), TASK, hidden_weight=1.0, layer_map=[2])
    assert "attention_weight must be >= 0, got -1.0" in error_of(
        capsys, ["distill", "classify", "--teacher", str(teacher_dir), "--out", str(tmp_path / "x"), "--train",
                 str(data_dir / "train.tsv"), "--attention-weight", "-1", "--verbose", "0"])
    assert not (tmp_path / "x").exists()
