"""`finetune(..., jit_compile=True)`: every task kind trains with the whole step one XLA program at fixed shapes.

Checks that can fail: the batches' `element_spec` is static `(batch, sequence_length)` with the remainder
dropped; the traced train step carries `_XlaMustCompile`; one step at fixed shapes gives the same loss and
weights under XLA as without it (1e-4); `--strategy tpu` takes the same path.
"""

import json
import random

import keras
import numpy as np
import pytest
import tensorflow as tf

import kbert
from kbert.tasks import ClassificationTask, QuestionAnsweringTask, TaggingTask
from kbert.tasks.classification import RegressionTask
from kbert.text import BertPreprocessor, load_tokenizer
from kbert.training.finetune import FinetuneConfig, finetune
from kbert.training.xla import compile_model
from tests.training.conftest import FILLER, keyword_rows, write_tsv
from tests.training.test_finetune_tasks import _conll, _squad, qa_examples
from tests.xla_checks import assert_fixed_batches, xla_compiled_steps

SEQ, BATCH = 16, 8


class KeepModel(keras.callbacks.Callback):
    """Keeps the trained model (the driver returns only its results)."""

    def on_train_end(self, logs=None):
        self.trained = self.model


def _tagging_rows(n, seed):
    rng = random.Random(seed)
    tags = {"cat": "B-ANI", "dog": "B-ANI", "mat": "B-OBJ"}
    return [(words, [tags.get(w, "O") for w in words])
            for words in (rng.choices(FILLER, k=rng.randint(3, 8)) for _ in range(n))]


def _regression_rows(n, seed):
    rng = random.Random(seed)
    rows = []
    for _ in range(n):
        count = rng.randint(0, 3)
        words = rng.choices(FILLER, k=4) + ["good"] * count
        rows.append((" ".join(rng.sample(words, len(words))), f"{count * 0.5:.1f}"))
    return rows


def task_data(kind, directory, n):
    """(task, train file) of `n` synthetic examples for each task kind."""
    if kind == "classify":
        return ClassificationTask(), write_tsv(directory / "train.tsv", ["text", "label"], keyword_rows(n, 0))
    if kind == "regress":
        return (ClassificationTask(label_column="score"),
                write_tsv(directory / "train.tsv", ["text", "score"], _regression_rows(n, 0)))
    if kind == "tag":
        return TaggingTask(), _conll(directory / "train.txt", _tagging_rows(n, 0))
    return QuestionAnsweringTask(doc_stride=8, max_query_length=4), _squad(directory / "train.json", qa_examples(n, 0))


KINDS = ["classify", "regress", "tag", "qa"]


@pytest.mark.parametrize("kind", KINDS)
def test_fixed_shape_batches(kind, tmp_path, tiny_init):
    task, train = task_data(kind, tmp_path, 43)
    examples = task.read_examples(str(train))
    task = task.prepare(str(train), examples)
    preprocessor = BertPreprocessor(load_tokenizer(tiny_init), SEQ, padding="fixed")
    data = task.dataset(examples, preprocessor, BATCH, training=True, seed=0, drop_remainder=True)
    assert_fixed_batches(data.dataset.element_spec, BATCH, SEQ)
    batches = list(data.dataset)
    assert len(batches) == data.size // BATCH  # the short last batch is gone
    assert kind == "qa" or data.size % BATCH  # (43 examples leave one; QA's windows may not)
    inputs, labels = batches[0]
    assert inputs["token_ids"].dtype == tf.int32 and inputs["segment_ids"].dtype == tf.int32
    if kind == "tag":  # labels padded to the sequence length, -100 off the first pieces
        assert labels.shape == (BATCH, SEQ) and (labels.numpy() == -100).any()
    if kind == "qa":  # start and end positions are scalars per window
        assert labels["start_logits"].shape == (BATCH,) and labels["end_logits"].dtype == tf.int32
    with pytest.raises(ValueError, match="padding='fixed'|dynamically"):
        task.dataset(examples, BertPreprocessor(load_tokenizer(tiny_init), SEQ, padding="dynamic"), BATCH,
                     training=True, drop_remainder=True)


@pytest.mark.parametrize("kind", KINDS)
def test_jit_finetune_trains_an_xla_step(kind, tmp_path, tiny_init):
    task, train = task_data(kind, tmp_path, 100 if kind != "qa" else 60)
    keep = KeepModel()
    config = FinetuneConfig(train=str(train), out=str(tmp_path / "out"), init=str(tiny_init), sequence_length=SEQ,
                            epochs=6, batch_size=BATCH, learning_rate=3e-3, verbose=0, jit_compile=True,
                            steps_per_execution=2)
    result = finetune(task, config, callbacks=[keep])
    model = keep.trained
    assert model.jit_compile is True and model.steps_per_execution == 2
    steps = xla_compiled_steps(model)
    assert steps, "the train step was not compiled with XLA"
    # One fixed shape: every trace of the XLA step (TensorFlow traces a step that creates variables, like
    # QA's per-output loss trackers, twice) is for the same (BATCH, SEQ) inputs.
    signatures = {str(step.structured_input_signature) for step in steps}
    assert len(signatures) == 1
    shapes = [t.shape.as_list() for t in tf.nest.flatten(steps[0].structured_input_signature)]
    assert [BATCH, SEQ] in shapes and all(s[0] == BATCH for s in shapes)
    history = json.loads((tmp_path / "out" / "history.json").read_text())
    rows = result["train_examples"]
    assert history["steps_per_epoch"] == rows // BATCH // 2 * 2
    losses = history["epochs"]["loss"]
    assert len(losses) == 6 and losses[-1] < 0.9 * losses[0]
    assert int(model.optimizer.iterations.numpy()) == 6 * history["steps_per_epoch"]
    assert kbert.load_model(tmp_path / "out").task.name == ("regress" if kind == "regress" else task.name)


def test_non_jit_finetune_is_not_xla(tmp_path, tiny_init):
    # The check above can fail: the default step is a plain graph.
    task, train = task_data("classify", tmp_path, 32)
    keep = KeepModel()
    finetune(task, FinetuneConfig(train=str(train), out=str(tmp_path / "out"), init=str(tiny_init),
                                  sequence_length=SEQ, epochs=1, batch_size=BATCH, verbose=0), callbacks=[keep])
    assert keep.trained.jit_compile is False and xla_compiled_steps(keep.trained) == []


def _twin_models(task, seed=0):
    """Two task models with the same weights and no dropout."""
    models = []
    for _ in range(2):
        keras.utils.set_random_seed(seed)
        encoder = kbert.BertEncoder(vocab_size=24, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                                    intermediate_size=64, max_position_embeddings=SEQ, hidden_dropout_prob=0.0,
                                    attention_probs_dropout_prob=0.0)
        models.append(task.build_model(encoder, dropout=0.0))
    return models


@pytest.mark.parametrize("kind", KINDS)
def test_xla_step_matches_the_graph_step(kind, tmp_path, tiny_init):
    # Numerics against the non-XLA path: two SGD steps on the same fixed-shape batch, same start.
    task, train = task_data(kind, tmp_path, 16)
    examples = task.read_examples(str(train))
    task = task.prepare(str(train), examples)
    preprocessor = BertPreprocessor(load_tokenizer(tiny_init), SEQ, padding="fixed")
    x, y = next(iter(task.dataset(examples, preprocessor, BATCH, training=True, drop_remainder=True).dataset))
    results = []
    for model, jit in zip(_twin_models(task), (False, True)):
        model(x)
        compile_model(model, jit_compile=jit, optimizer=keras.optimizers.SGD(0.5))
        losses = [float(model.train_on_batch(x, y, return_dict=True)["loss"]) for _ in range(2)]
        assert bool(xla_compiled_steps(model)) == jit
        results.append((losses, [w.numpy() for w in model.trainable_weights]))
    (graph_losses, graph_weights), (xla_losses, xla_weights) = results
    np.testing.assert_allclose(xla_losses, graph_losses, rtol=1e-4, atol=1e-5)
    assert graph_losses[1] != graph_losses[0]  # the step moved the weights
    for a, b in zip(graph_weights, xla_weights):
        np.testing.assert_allclose(b, a, rtol=1e-4, atol=1e-5)


def test_tpu_strategy_takes_the_fixed_shape_xla_path(tmp_path, tiny_init, monkeypatch):
    # No TPU here: the strategy is stood in for; what `--strategy tpu` changes in the driver is checked.
    asked = []

    def fake_get_strategy(name, devices=None, tpu=None):
        asked.append((name, tpu))
        return tf.distribute.get_strategy()

    monkeypatch.setattr("kbert.training.run_setup.get_strategy", fake_get_strategy)
    task, train = task_data("classify", tmp_path, 40)
    keep = KeepModel()
    finetune(task, FinetuneConfig(train=str(train), out=str(tmp_path / "out"), init=str(tiny_init),
                                  sequence_length=SEQ, epochs=1, batch_size=BATCH, verbose=0, strategy="tpu",
                                  tpu="local"), callbacks=[keep])
    assert asked == [("tpu", "local")]
    assert keep.trained.jit_compile is True and xla_compiled_steps(keep.trained)


def test_too_few_rows_for_one_fixed_step(tmp_path, tiny_init):
    task, train = task_data("classify", tmp_path, 12)
    with pytest.raises(ValueError, match="no fixed-shape epoch"):
        finetune(task, FinetuneConfig(train=str(train), out=str(tmp_path / "out"), init=str(tiny_init),
                                      sequence_length=SEQ, epochs=1, batch_size=8, steps_per_execution=2,
                                      verbose=0, jit_compile=True))


def test_cli_flags_reach_the_config(tmp_path, tiny_init, monkeypatch):
    from kbert.cli.main import main

    seen = []

    def fake_finetune(task, config):
        seen.append(config)
        return {"metrics": {}, "model_dir": config.out, "train_examples_per_second": 1.0, "replicas": 1,
                "phase_seconds": dict.fromkeys(("load", "first_step", "train", "evaluate", "save"), 0.0)}

    monkeypatch.setattr("kbert.training.finetune.finetune", fake_finetune)
    for command in ("classify", "tag", "qa"):
        assert main(["finetune", command, "--init", str(tiny_init), "--train", "t", "--out", "o", "--verbose", "0",
                     "--jit-compile", "--steps-per-execution", "4", "--strategy", "tpu", "--tpu", "local"]) == 0
    assert [(c.jit_compile, c.steps_per_execution, c.strategy, c.tpu) for c in seen] == [(True, 4, "tpu", "local")] * 3
    assert main(["finetune", "classify", "--init", str(tiny_init), "--train", "t", "--out", "o", "--verbose", "0"]) == 0
    assert (seen[-1].jit_compile, seen[-1].steps_per_execution, seen[-1].tpu) == (False, 1, None)
