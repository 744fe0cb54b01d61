"""Distillation: the losses against numpy, the student's copied layers, a run that brings the student closer to its
teacher, `kbert distill` end to end, and its errors."""

import json
import pathlib

import keras
import numpy as np
import pytest
import tensorflow as tf

import kbert
from kbert.cli.main import main
from kbert.training.distill import distill
from kbert.training.distill_config import DistillConfig
from kbert.training.distiller import Distiller
from kbert.training.finetune_config import FinetuneConfig
from kbert.training.student import build_student, select_layers
from tests.conftest import TINY_VOCAB
from tests.training.conftest import keyword_rows, write_tsv

T = 2.0


def log_softmax(x: np.ndarray) -> np.ndarray:
    x = x - x.max(-1, keepdims=True)
    return x - np.log(np.exp(x).sum(-1, keepdims=True))


def numpy_kl(teacher: np.ndarray, student: np.ndarray, temperature: float) -> np.ndarray:
    """KL(softmax(t/T) || softmax(s/T)) * T^2 per row, in float64."""
    t, s = log_softmax(teacher.astype(np.float64) / temperature), log_softmax(student.astype(np.float64) / temperature)
    return (np.exp(t) * (t - s)).sum(-1) * temperature ** 2


# -- (a) the losses ------------------------------------------------------------------------------------------
def test_classification_loss_is_tempered_kl():
    rng = np.random.default_rng(0)
    teacher, student = rng.normal(size=(5, 3)).astype(np.float32) * 3, rng.normal(size=(5, 3)).astype(np.float32)
    task = kbert.ClassificationTask(labels=["a", "b", "c"])
    for temperature in (1.0, 2.0, 4.0):
        got = float(task.distillation_loss(teacher, student, {}, temperature))
        assert got == pytest.approx(numpy_kl(teacher, student, temperature).mean(), rel=1e-5)
    assert float(task.distillation_loss(teacher, teacher, {}, T)) == pytest.approx(0.0, abs=1e-6)


def test_tagging_loss_counts_real_tokens_only():
    rng = np.random.default_rng(1)
    teacher, student = rng.normal(size=(2, 4, 3)).astype(np.float32), rng.normal(size=(2, 4, 3)).astype(np.float32)
    mask = np.array([[1, 1, 1, 0], [1, 1, 0, 0]], np.int32)
    task = kbert.TaggingTask(labels=["O", "B-X", "I-X"])
    got = float(task.distillation_loss(teacher, student, {"padding_mask": mask}, T))
    per_token = numpy_kl(teacher, student, T)
    assert got == pytest.approx((per_token * mask).sum() / mask.sum(), rel=1e-5)
    assert got != pytest.approx(per_token.mean(), rel=1e-3)  # the padding is left out


def test_qa_loss_averages_start_and_end():
    rng = np.random.default_rng(2)
    names = ("start_logits", "end_logits")
    teacher = {n: rng.normal(size=(3, 6)).astype(np.float32) for n in names}
    student = {n: rng.normal(size=(3, 6)).astype(np.float32) for n in names}
    for outputs in (teacher, student):  # padded positions, as the QA head marks them
        for n in names:
            outputs[n][:, 4:] = -1e4
    got = float(kbert.QuestionAnsweringTask().distillation_loss(teacher, student, {}, T))
    want = np.mean([numpy_kl(teacher[n], student[n], T).mean() for n in names])
    assert got == pytest.approx(want, rel=1e-5)


def test_scores_and_vectors_take_mse():
    rng = np.random.default_rng(3)
    teacher, student = rng.normal(size=(4, 8)).astype(np.float32), rng.normal(size=(4, 8)).astype(np.float32)
    want = ((teacher - student) ** 2).mean()
    assert float(kbert.EmbeddingTask().distillation_loss(teacher, student, {}, T)) == pytest.approx(want, rel=1e-5)
    assert float(kbert.RegressionTask().distillation_loss(teacher[:, :1], student[:, :1], {}, T)) == pytest.approx(
        ((teacher[:, 0] - student[:, 0]) ** 2).mean(), rel=1e-5)
    with pytest.raises(ValueError, match="4 wide, the teacher.s 8"):
        kbert.EmbeddingTask().distillation_loss(teacher, student[:, :4], {}, T)


def classifier(layers: int, seed: int, family=kbert.BertEncoder, hidden_size: int = 16,
               num_attention_heads: int = 2, **fields) -> keras.Model:
    keras.utils.set_random_seed(seed)
    encoder = family(vocab_size=len(TINY_VOCAB), hidden_size=hidden_size, num_hidden_layers=layers,
                     num_attention_heads=num_attention_heads, intermediate_size=32, max_position_embeddings=32, **fields)
    return kbert.BertClassifier(encoder, 2)


def batch():
    tokenizer = kbert.BertTokenizer(TINY_VOCAB)
    inputs = kbert.BertPreprocessor(tokenizer, 16)(tf.constant(["the good cat sat", "a bad dog", "the mat ."]))
    return {k: v for k, v in inputs.items()}


@pytest.mark.parametrize("alpha", [0.0, 0.3, 1.0])
def test_distiller_mixes_kl_and_label_loss(alpha):
    teacher, student = classifier(2, 0), classifier(1, 1)
    for model in (teacher, student):  # a fresh head's logits are ~0.01: sharpen them, for a KL well above rounding
        kernel, bias = model.output_dense.get_weights()
        model.output_dense.set_weights([kernel * 300, bias])
    task = kbert.ClassificationTask(labels=["0", "1"])
    distiller = Distiller(teacher, student, task, temperature=T, alpha=alpha)
    distiller.compile(optimizer=keras.optimizers.SGD(0.0))
    inputs, labels = batch(), np.array([1, 0, 1], np.int32)
    t, s = teacher(inputs, training=False).numpy(), student(inputs, training=False).numpy()
    kl = numpy_kl(t, s, T).mean()
    cross_entropy = -log_softmax(s.astype(np.float64))[np.arange(3), labels].mean()
    labelled = distiller.distillation_step(inputs, labels, tf.ones([3]), training=False)
    assert float(labelled["distillation_loss"]) == pytest.approx(kl, rel=1e-4)
    assert float(labelled["loss"]) == pytest.approx(alpha * kl + (1 - alpha) * cross_entropy, rel=1e-4)
    # Texts without labels: the teacher's outputs alone, whatever alpha.
    unlabelled = distiller.distillation_step(inputs, labels, tf.zeros([3]), training=False)
    assert float(unlabelled["loss"]) == pytest.approx(kl, rel=1e-4)


def test_teacher_is_frozen_and_student_trains():
    teacher, student = classifier(2, 0), classifier(1, 1)
    before_teacher = [w.copy() for w in teacher.get_weights()]
    before_student = [w.copy() for w in student.get_weights()]
    distiller = Distiller(teacher, student, kbert.ClassificationTask(labels=["0", "1"]), alpha=0.5)
    distiller.compile(optimizer=keras.optimizers.SGD(0.5))
    data = tf.data.Dataset.from_tensors((batch(), np.array([1, 0, 1], np.int32)))
    distiller.fit(data, epochs=2, verbose=0, shuffle=False)
    assert all(np.array_equal(a, b) for a, b in zip(before_teacher, teacher.get_weights()))
    assert any(not np.allclose(a, b) for a, b in zip(before_student, student.get_weights()))


@pytest.mark.parametrize("temperature, alpha", [(0.0, 0.5), (2.0, -0.1), (2.0, 1.5)])
def test_distiller_rejects_bad_settings(temperature, alpha):
    with pytest.raises(ValueError, match="temperature|alpha"):
        Distiller(classifier(1, 0), classifier(1, 1), kbert.ClassificationTask(labels=["0", "1"]),
                  temperature=temperature, alpha=alpha)


# -- (b) the student ------------------------------------------------------------------------------------------
def test_every_other_layer_is_the_teachers():
    teacher = classifier(4, 0)
    task = kbert.ClassificationTask(labels=["0", "1"])
    student, origin = build_student(teacher, task)
    assert origin == {"layers": [0, 2]} and select_layers(6, 3) == [0, 2, 4]
    for j, i in enumerate([0, 2]):
        mine, theirs = student.encoder.transformer_layers[j], teacher.encoder.transformer_layers[i]
        assert len(mine.weights) == len(theirs.weights) > 0
        for a, b in zip(mine.weights, theirs.weights):
            np.testing.assert_array_equal(a.numpy(), b.numpy())
    for name in ("embeddings", "pooler"):
        for a, b in zip(student.encoder.get_layer(name).weights, teacher.encoder.get_layer(name).weights):
            np.testing.assert_array_equal(a.numpy(), b.numpy())
    for a, b in zip(student.output_dense.weights, teacher.output_dense.weights):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    # and layer 1 is not among them
    assert not np.array_equal(student.encoder.transformer_layers[1].weights[0].numpy(),
                              teacher.encoder.transformer_layers[1].weights[0].numpy())


@pytest.mark.parametrize("family, fields", [(kbert.BertEncoder, {}),
                                            (kbert.AlbertEncoder, {"embedding_size": 8, "num_hidden_groups": 2})])
def test_student_of_every_layer_is_the_teacher(family, fields):
    teacher = classifier(4, 0, family, **fields)
    student, _ = build_student(teacher, kbert.ClassificationTask(labels=["0", "1"]), layers=4)
    inputs = batch()
    np.testing.assert_allclose(student(inputs, training=False).numpy(), teacher(inputs, training=False).numpy(),
                               atol=1e-6)


def test_albert_student_keeps_its_groups():
    teacher = classifier(4, 0, kbert.AlbertEncoder, embedding_size=8, num_hidden_groups=2)
    student, origin = build_student(teacher, kbert.ClassificationTask(labels=["0", "1"]), layers=2)
    assert origin == {"layers": [0, 2]}
    for g in range(2):  # student layer g runs group g, the group its teacher layer 2g ran
        for a, b in zip(student.encoder.transformer_groups[g][0].weights, teacher.encoder.transformer_groups[g][0].weights):
            np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_preset_student_reads_the_teachers_vocabulary():
    teacher = classifier(2, 0)
    student, origin = build_student(teacher, kbert.ClassificationTask(labels=["0", "1"]), preset="tiny")
    assert origin == {"preset": "tiny"}
    assert student.encoder.bert_config.vocab_size == len(TINY_VOCAB)
    assert student.encoder.bert_config.hidden_size == 128 and student.output.shape == (None, 2)


# -- (c) a run, its directory, evaluate and export -------------------------------------------------------------
@pytest.fixture(scope="module")
def data_dir(tmp_path_factory) -> pathlib.Path:
    directory = tmp_path_factory.mktemp("distill_data")
    write_tsv(directory / "train.tsv", ["text", "label"], keyword_rows(192, 10))
    write_tsv(directory / "dev.tsv", ["text", "label"], keyword_rows(48, 11))
    (directory / "texts.txt").write_text("\n".join(text for text, _ in keyword_rows(64, 12)) + "\n")
    return directory


@pytest.fixture(scope="module")
def teacher_dir(data_dir, tmp_path_factory) -> pathlib.Path:
    """A 4-layer classifier fine-tuned on the keyword data."""
    root = tmp_path_factory.mktemp("teacher")
    encoder = kbert.BertEncoder(vocab_size=len(TINY_VOCAB), hidden_size=32, num_hidden_layers=4,
                                num_attention_heads=2, intermediate_size=64, max_position_embeddings=64)
    kbert.save_pretrained(encoder, root / "init", vocabulary=TINY_VOCAB)
    kbert.finetune(kbert.ClassificationTask(), FinetuneConfig(
        train=str(data_dir / "train.tsv"), out=str(root / "model"), init=str(root / "init"), sequence_length=16,
        epochs=4, batch_size=16, learning_rate=1e-3, verbose=0, mixed_precision="none"))
    return root / "model"


def mean_kl(teacher: keras.Model, student: keras.Model, texts: list[str]) -> float:
    inputs = teacher.preprocessor(tf.constant(texts))
    return float(numpy_kl(teacher.predict_on_batch(inputs), student.predict_on_batch(inputs), T).mean())


def test_distillation_brings_the_student_closer(teacher_dir, data_dir, tmp_path):
    teacher = kbert.load_model(teacher_dir)
    texts = [text for text, _ in keyword_rows(48, 11)]
    start, _ = build_student(teacher, teacher.task, layers=1)
    before = mean_kl(teacher, start, texts)
    out = tmp_path / "student"
    result = distill(DistillConfig(teacher=str(teacher_dir), student_layers=1, alpha=1.0),
                     FinetuneConfig(train=str(data_dir / "train.tsv"), validation=str(data_dir / "dev.tsv"),
                                    out=str(out), sequence_length=16, epochs=4, batch_size=16, learning_rate=1e-3,
                                    verbose=0, mixed_precision="none"))
    student = kbert.load_model(out)
    after = mean_kl(teacher, student, texts)
    assert after < 0.5 * before, (before, after)
    assert student.encoder.bert_config.num_hidden_layers == 1 and student.task == teacher.task
    record = json.loads((out / "distillation.json").read_text())
    assert record["teacher"] == str(teacher_dir) and record["student"] == {"layers": [0]}
    assert (record["temperature"], record["alpha"]) == (2.0, 1.0)
    evaluated = kbert.evaluate_model(out, data_dir / "dev.tsv", verbose=0)
    assert evaluated["accuracy"] == pytest.approx(result["metrics"]["accuracy"])
    assert main(["export", str(out), "--out", str(tmp_path / "export")]) == 0
    served = tf.saved_model.load(str(tmp_path / "export"))
    got = served.signatures["serving_default"](text=tf.constant(texts[:4]))
    assert set(got) and all(v.shape[0] == 4 for v in got.values())


# -- (d) the command ------------------------------------------------------------------------------------------
def test_cli_classify_with_unlabelled_texts(teacher_dir, data_dir, tmp_path, capsys):
    out = tmp_path / "cli_student"
    code = main(["distill", "classify", "--teacher", str(teacher_dir), "--out", str(out), "--train",
                 str(data_dir / "train.tsv"), "--validation", str(data_dir / "dev.tsv"), "--unlabelled",
                 str(data_dir / "texts.txt"), "--student-layers", "2", "--sequence-length", "16", "--epochs", "1",
                 "--batch-size", "16", "--verbose", "0", "--mixed-precision", "none"])
    assert code == 0
    printed = capsys.readouterr().out
    assert '"student"' in printed and '"teacher"' in printed
    record = json.loads((out / "distillation.json").read_text())
    assert record["unlabelled_examples"] == 64 and record["alpha"] == 0.5 and record["student"] == {"layers": [0, 2]}
    history = json.loads((out / "history.json").read_text())
    # 192 / 16 labelled batches and 64 / 16 unlabelled ones, each epoch
    assert history["steps_per_epoch"] == 12 + 4 and len(history["epochs"]["distillation_loss"]) == 1
    assert 0.0 <= json.loads((out / "metrics.json").read_text())["accuracy"] <= 1.0


def test_cli_unlabelled_only_trains_on_the_teacher(teacher_dir, data_dir, tmp_path):
    out = tmp_path / "only_texts"
    assert main(["distill", "classify", "--teacher", str(teacher_dir), "--out", str(out), "--unlabelled",
                 str(data_dir / "texts.txt"), "--sequence-length", "16", "--epochs", "1", "--batch-size", "16",
                 "--verbose", "0", "--mixed-precision", "none"]) == 0
    record = json.loads((out / "distillation.json").read_text())
    assert record["alpha"] == 1.0 and record["train"] is None and record["student"] == {"layers": [0, 2]}


def test_cli_tag(tmp_path):
    rows = [("the cat sat", "O B-X O"), ("a good dog ran", "O O B-X O"), ("the mat", "O B-X")] * 8
    conll = "".join("".join(f"{w} {t}\n" for w, t in zip(s.split(), tags.split())) + "\n" for s, tags in rows)
    (tmp_path / "train.txt").write_text(conll)
    encoder = kbert.BertEncoder(vocab_size=len(TINY_VOCAB), hidden_size=16, num_hidden_layers=2,
                                num_attention_heads=2, intermediate_size=32, max_position_embeddings=32)
    kbert.save_pretrained(encoder, tmp_path / "init", vocabulary=TINY_VOCAB)
    assert main(["finetune", "tag", "--init", str(tmp_path / "init"), "--train", str(tmp_path / "train.txt"),
                 "--out", str(tmp_path / "teacher"), "--sequence-length", "16", "--epochs", "1", "--batch-size", "8",
                 "--verbose", "0", "--mixed-precision", "none"]) == 0
    out = tmp_path / "student"
    assert main(["distill", "tag", "--teacher", str(tmp_path / "teacher"), "--out", str(out), "--train",
                 str(tmp_path / "train.txt"), "--validation", str(tmp_path / "train.txt"), "--unlabelled",
                 str(tmp_path / "train.txt"), "--student-layers", "1", "--sequence-length", "16", "--epochs", "1",
                 "--batch-size", "8", "--verbose", "0", "--mixed-precision", "none"]) == 0
    student = kbert.load_model(out)
    assert isinstance(student, kbert.BertTokenClassifier) and student.encoder.bert_config.num_hidden_layers == 1
    assert student.task.labels == kbert.load_model(tmp_path / "teacher").task.labels == ["B-X", "O"]
    assert json.loads((out / "metrics.json").read_text())["num_examples"] == 24
    assert json.loads((out / "distillation.json").read_text())["unlabelled_examples"] == 24


# -- (e) errors -----------------------------------------------------------------------------------------------
def error_of(capsys, argv: list[str]) -> str:
    capsys.readouterr()
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return err.splitlines()[-1]


def test_cli_errors(teacher_dir, data_dir, tmp_path, capsys):
    common = ["--out", str(tmp_path / "x"), "--train", str(data_dir / "train.tsv"), "--sequence-length", "16",
              "--verbose", "0", "--mixed-precision", "none"]
    assert "not a kbert model directory" in error_of(
        capsys, ["distill", "classify", "--teacher", str(data_dir), *common])
    assert "cannot be taken from a teacher of 4 layers" in error_of(
        capsys, ["distill", "classify", "--teacher", str(teacher_dir), "--student-layers", "5", *common])
    assert "alpha must be in [0, 1], got 1.5" in error_of(
        capsys, ["distill", "classify", "--teacher", str(teacher_dir), "--alpha", "1.5", *common])
    assert "not a tag model" in error_of(capsys, ["distill", "tag", "--teacher", str(teacher_dir), *common])
    assert "one way" in error_of(capsys, ["distill", "classify", "--teacher", str(teacher_dir), "--student-layers",
                                          "2", "--student-preset", "tiny", *common])
    assert not (tmp_path / "x").exists()


def test_the_teacher_term_changes_what_the_student_learns(teacher_dir, data_dir, tmp_path):
    """The same student, data and seed with alpha 0 (labels alone) and 0.5 end in different models: the
    distillation term reaches the student's update (the two SST-2 students of docs/distillation.md scored alike)."""
    texts = [text for text, _ in keyword_rows(48, 11)]
    logits = {}
    for alpha in ("0", "0.5"):
        out = tmp_path / f"alpha_{alpha}"
        assert main(["distill", "classify", "--teacher", str(teacher_dir), "--out", str(out), "--train",
                     str(data_dir / "train.tsv"), "--student-layers", "2", "--alpha", alpha, "--sequence-length",
                     "16", "--epochs", "2", "--batch-size", "16", "--learning-rate", "1e-3", "--verbose", "0",
                     "--mixed-precision", "none"]) == 0
        student = kbert.load_model(out)
        logits[alpha] = student.predict_on_batch(student.preprocessor(tf.constant(texts)))
    assert np.abs(logits["0"] - logits["0.5"]).max() > 1e-3
