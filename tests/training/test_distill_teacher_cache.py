"""`kbert distill --cache-teacher DIR`: the cached outputs are the teacher's, a step on them is the step on the
teacher's, a second run reads them without the teacher, and a cache is never mixed up or half-written."""

import json

import keras
import numpy as np
import pytest
import tensorflow as tf

import kbert
import kbert.file_io as file_io
from kbert.cli.main import main
from kbert.training import teacher_cache
from kbert.training.distill import distill, mixed_batches
from kbert.training.distill_config import DistillConfig
from kbert.training.distiller import Distiller
from kbert.training.finetune_config import FinetuneConfig
from kbert.training.teacher_cache import TEACHER_OUTPUTS, cached_teacher_batches
from tests.conftest import TINY_VOCAB
from tests.training.conftest import keyword_rows, write_tsv

MODEL_INPUTS = ("token_ids", "segment_ids", "padding_mask")


def classifier(layers: int, seed: int) -> keras.Model:
    keras.utils.set_random_seed(seed)
    encoder = kbert.BertEncoder(vocab_size=len(TINY_VOCAB), hidden_size=16, num_hidden_layers=layers,
                                num_attention_heads=2, intermediate_size=32, max_position_embeddings=32)
    model = kbert.BertClassifier(encoder, 2)
    kernel, bias = model.output_dense.get_weights()  # a fresh head's logits are ~0.01: sharpen them
    model.output_dense.set_weights([kernel * 50, bias])
    return model


def training_batches(seed: int = 0) -> tuple[tf.data.Dataset, int]:
    task = kbert.ClassificationTask(labels=["0", "1"])
    examples = [{"text": text, "text_pair": None, "label": label} for text, label in keyword_rows(40, seed)]
    packer = kbert.BertPreprocessor(kbert.BertTokenizer(TINY_VOCAB), 16, padding="dynamic")
    return mixed_batches([(task.dataset(examples, packer, 8, training=True, seed=seed), 1.0)], 8, seed)


def as_rows(batch) -> list[bytes]:
    """A batch's rows as bytes of their token ids (to compare batches whatever their order)."""
    return [row.tobytes() for row in batch[0]["token_ids"].numpy()]


def test_cached_outputs_are_the_teachers_and_each_epoch_reorders_them():
    teacher = classifier(2, 0)
    data, count = training_batches()
    cached = cached_teacher_batches(data, count, teacher, "ram://teacher-cache/a", {"k": 1}, seed=0)
    epochs = [list(cached), list(cached)]
    assert len(epochs[0]) == len(epochs[1]) == count == 5
    for inputs, _, _ in epochs[0]:
        want = teacher({name: inputs[name] for name in MODEL_INPUTS}, training=False)
        np.testing.assert_allclose(inputs[TEACHER_OUTPUTS].numpy(), want.numpy(), atol=1e-5)
    first, second = ([as_rows(batch) for batch in epoch] for epoch in epochs)
    assert sorted(map(sorted, first)) == sorted(map(sorted, second))  # the same batches ...
    assert first != second  # ... in a new order (5! orders: a repeat has odds 1/120, and the seed is fixed)
    assert sorted(file_io.listdir("ram://teacher-cache/a")) == ["batches.tfrecord", "teacher_cache.json"]


def test_a_step_on_cached_outputs_never_runs_the_teacher():
    teacher, student = classifier(2, 0), classifier(1, 1)
    data, count = training_batches()
    inputs, labels, labelled = next(iter(cached_teacher_batches(data, count, teacher, "ram://teacher-cache/b",
                                                                {"k": 1}, seed=0)))
    distiller = Distiller(teacher, student, kbert.ClassificationTask(labels=["0", "1"]), alpha=0.5)
    distiller.compile(optimizer=keras.optimizers.AdamW(1e-3))
    live = distiller.distillation_step(inputs, labels, labelled, training=False)
    for weight in teacher.weights:  # a different teacher now: the cached step must not see it
        weight.assign(tf.random.normal(weight.shape, seed=3) if weight.dtype == "float32" else weight)
    model_only = {name: inputs[name] for name in MODEL_INPUTS}
    changed = distiller.distillation_step(model_only, labels, labelled, training=False)
    cached = distiller.distillation_step(inputs, labels, labelled, training=False)
    assert float(cached["loss"]) == pytest.approx(float(live["loss"]), rel=1e-5)
    assert float(cached["distillation_loss"]) > 0 and abs(float(changed["loss"]) - float(live["loss"])) > 1e-3


def test_a_cache_of_other_settings_or_a_foreign_directory_is_refused():
    teacher = classifier(2, 0)
    data, count = training_batches()
    cached_teacher_batches(data, count, teacher, "ram://teacher-cache/c", {"batch_size": 8, "seed": 0}, seed=0)
    with pytest.raises(ValueError, match=r"other settings \(batch_size differs\)"):
        cached_teacher_batches(data, count, teacher, "ram://teacher-cache/c", {"batch_size": 16, "seed": 0}, seed=0)
    file_io.write_text("ram://teacher-cache/d/notes.txt", "mine")
    with pytest.raises(ValueError, match="is not a teacher cache"):
        cached_teacher_batches(data, count, teacher, "ram://teacher-cache/d", {"k": 1}, seed=0)
    assert file_io.listdir("ram://teacher-cache/d") == ["notes.txt"]


def test_an_interrupted_write_leaves_no_cache(monkeypatch):
    teacher = classifier(2, 0)
    data, count = training_batches()
    original = teacher_cache.with_outputs
    # The pass fails at its second batch (the dataset claims one): the cache's directory must not appear.
    monkeypatch.setattr(teacher_cache, "with_outputs", lambda data, teacher: original(data, teacher).apply(
        tf.data.experimental.assert_cardinality(1)))
    with pytest.raises(tf.errors.OpError):
        cached_teacher_batches(data, count, teacher, "ram://teacher-cache/e", {"k": 1}, seed=0)
    assert not file_io.exists("ram://teacher-cache/e")
    monkeypatch.undo()
    assert len(list(cached_teacher_batches(data, count, teacher, "ram://teacher-cache/e", {"k": 1}, seed=0))) == count


@pytest.fixture(scope="module")
def teacher_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("cache_teacher")
    write_tsv(root / "train.tsv", ["text", "label"], keyword_rows(48, 20))
    encoder = kbert.BertEncoder(vocab_size=len(TINY_VOCAB), hidden_size=16, num_hidden_layers=2,
                                num_attention_heads=2, intermediate_size=32, max_position_embeddings=32)
    kbert.save_pretrained(encoder, root / "init", vocabulary=TINY_VOCAB)
    kbert.finetune(kbert.ClassificationTask(), FinetuneConfig(
        train=str(root / "train.tsv"), out=str(root / "model"), init=str(root / "init"), sequence_length=16,
        epochs=1, batch_size=16, verbose=0, mixed_precision="none"))
    return root


def test_cli_writes_the_cache_once_and_a_second_run_reads_it(teacher_dir, tmp_path, monkeypatch):
    cache = "ram://teacher-cache/cli"
    argv = ["distill", "classify", "--teacher", str(teacher_dir / "model"), "--train", str(teacher_dir / "train.tsv"),
            "--cache-teacher", cache, "--student-layers", "1", "--sequence-length", "16", "--epochs", "2",
            "--batch-size", "16", "--verbose", "0", "--mixed-precision", "none"]
    assert main([*argv, "--out", str(tmp_path / "first")]) == 0
    assert json.loads((tmp_path / "first" / "distillation.json").read_text())["cache_teacher"] == cache
    assert json.loads(file_io.read_text(file_io.join(cache, "teacher_cache.json")))["batches"] == 3
    history = json.loads((tmp_path / "first" / "history.json").read_text())
    assert history["steps_per_epoch"] == 3 and len(history["epochs"]["distillation_loss"]) == 2

    def no_teacher_pass(data, path):
        raise AssertionError("the teacher ran over the data again")

    monkeypatch.setattr(teacher_cache, "write_batches", no_teacher_pass)
    assert main([*argv, "--out", str(tmp_path / "second")]) == 0
    assert kbert.load_model(tmp_path / "second").encoder.bert_config.num_hidden_layers == 1


def test_the_cache_does_not_take_the_layer_losses(teacher_dir, tmp_path):
    with pytest.raises(ValueError, match="not its layers"):
        distill(DistillConfig(teacher=str(teacher_dir / "model"), cache_teacher=str(tmp_path / "c"),
                              hidden_weight=1.0),
                FinetuneConfig(train=str(teacher_dir / "train.tsv"), out=str(tmp_path / "o"), sequence_length=16,
                               verbose=0, mixed_precision="none"))
    assert not (tmp_path / "c").exists() and not (tmp_path / "o").exists()
