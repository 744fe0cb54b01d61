"""`kbert pretrain --jit-compile`: the whole step one XLA program at fixed shapes, on records and raw text."""

import json

import keras
import numpy as np
import pytest

import kbert
import kbert.training.xla
from kbert.cli.main import main
from kbert.models.bert_pretrainer import BertPretrainer
from kbert.pretraining_data.tfrecords import load_pretraining_dataset
from tests.training.test_pretrain_cli import MODEL, corpus  # noqa: F401 (fixture)
from tests.xla_checks import xla_compiled_steps


@pytest.fixture
def compiled(monkeypatch):
    """Records the models `kbert.training.xla.compile_model` compiles (the driver returns only a summary)."""
    models = []
    real = kbert.training.xla.compile_model

    def recording(model, **kwargs):
        models.append(model)
        real(model, **kwargs)

    monkeypatch.setattr(kbert.training.xla, "compile_model", recording)
    return models


@pytest.fixture
def records(corpus):  # noqa: F811
    data = corpus / "data"
    assert main(["create-pretraining-data", "--input", str(corpus / "corpus.txt"), "--vocab",
                 str(corpus / "vocab.txt"), "--out", str(data), "--sequence-length", "32",
                 "--dupe-factor", "2", "--masking", "dynamic"]) == 0
    (corpus / "model.json").write_text(json.dumps(MODEL))
    return data


def test_records_are_fixed_shape_batches(records):
    dataset = load_pretraining_dataset(records, 8, repeat=True, seed=0)
    for spec in dataset.element_spec.values():  # (8,), (8, 32) or (8, max_predictions_per_seq), static
        assert spec.shape.is_fully_defined() and spec.shape[0] == 8 and spec.dtype.name in ("int32", "bool",
                                                                                              "float32"), spec


def test_pretrain_jit_compile_from_records_trains_an_xla_step(records, compiled, corpus):  # noqa: F811
    out = corpus / "run"
    (corpus / "heldout.txt").write_text((corpus / "corpus.txt").read_text()[:3000], encoding="utf-8")
    assert main(["pretrain", "--train", str(records), "--config", str(corpus / "model.json"),
                 "--objective", "nsp", "--steps", "60", "--batch-size", "16", "--learning-rate", "5e-3",
                 "--warmup-steps", "6", "--save-every-steps", "20", "--jit-compile", "--steps-per-execution", "4",
                 "--heldout-text", str(corpus / "heldout.txt"), "--out", str(out), "--verbose", "0"]) == 0
    history = json.loads((out / "history.json").read_text())
    assert history["steps"] == 60
    losses = history["history"]["loss"]
    assert len(losses) == 3 and losses[-1] < 0.9 * losses[0]
    assert "mlm_accuracy" in history["heldout"]  # scored by the compiled step, on whole batches
    (model,) = compiled
    assert model.jit_compile is True and model.steps_per_execution == 4
    steps = xla_compiled_steps(model)
    assert steps and len({str(s.structured_input_signature) for s in steps}) == 1
    assert kbert.load_pretrained(out).bert_config.hidden_size == 32


def test_pretrain_tpu_strategy_forces_xla(corpus, compiled, monkeypatch):  # noqa: F811
    import tensorflow as tf

    monkeypatch.setattr("kbert.training.run_setup.get_strategy",
                        lambda name, devices=None, tpu=None: tf.distribute.get_strategy())
    assert main(["pretrain", "--train", str(corpus / "corpus.txt"), "--vocab", str(corpus / "vocab.txt"),
                 "--preset", "tiny", "--steps", "4", "--batch-size", "8", "--sequence-length", "32",
                 "--strategy", "tpu", "--tpu", "local", "--out", str(corpus / "raw"), "--verbose", "0"]) == 0
    (model,) = compiled
    assert model.jit_compile is True and xla_compiled_steps(model)


def test_steps_per_execution_must_divide_the_intervals(corpus):  # noqa: F811
    from kbert.training.pretrain_config import PretrainConfig

    with pytest.raises(ValueError, match="save_every_steps .* must divide by steps_per_execution"):
        PretrainConfig(train="x", out="y", steps=100, save_every_steps=10, steps_per_execution=4).validate()


def test_pretrainer_xla_step_matches_the_graph_step(records):
    batch = next(iter(load_pretraining_dataset(records, 8, seed=0)))
    results = []
    for jit in (False, True):
        keras.utils.set_random_seed(0)
        encoder = kbert.BertEncoder(**{**MODEL, "vocab_size": 43})
        model = BertPretrainer(encoder, objective="nsp")
        model(batch)
        kbert.training.xla.compile_model(model, jit_compile=jit, optimizer=keras.optimizers.SGD(0.5))
        losses = [float(model.train_on_batch(batch, return_dict=True)["loss"]) for _ in range(2)]
        assert bool(xla_compiled_steps(model)) == jit
        results.append((losses, [w.numpy() for w in model.trainable_weights]))
    (graph_losses, graph_weights), (xla_losses, xla_weights) = results
    np.testing.assert_allclose(xla_losses, graph_losses, rtol=1e-4, atol=1e-5)
    assert graph_losses[1] < graph_losses[0]
    for a, b in zip(graph_weights, xla_weights):
        np.testing.assert_allclose(b, a, rtol=1e-4, atol=1e-5)
