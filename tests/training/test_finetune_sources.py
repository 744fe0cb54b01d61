"""`kbert finetune` end to end on tfds sources (mocked) and with the non-default training flags.

tfds cannot download here, so `tfds.testing.mock_data` stands in: it keeps each dataset's real feature
spec and label names. The flags under test are the ones a notebook user rarely passes but a cluster user
does: --feature-based, --mixed-precision, --strategy (mirrored over two logical CPUs in a subprocess).
"""

import json
import warnings

import keras
import numpy as np
import pytest
import tensorflow as tf
import tensorflow_datasets as tfds

import kbert
from kbert.cli.main import main
from kbert.tasks import QuestionAnsweringTask, TaggingTask
from kbert.training.finetune import FinetuneConfig, finetune
from tests.training.conftest import keyword_rows, write_tsv
from tests.training._training_subprocess import run_cli_on_logical_cpus


def _weights(layer):
    return [np.array(w) for w in layer.weights]


def test_tfds_glue_feature_based_mixed_precision_one_device(tmp_path, tiny_init):
    out = tmp_path / "sst2"
    with tfds.testing.mock_data(num_examples=24):
        code = main(["finetune", "classify", "--init", str(tiny_init), "--train", "tfds:glue/sst2",
                     "--validation", "tfds:glue/sst2:validation", "--sequence-length", "32", "--epochs", "1",
                     "--batch-size", "8", "--feature-based", "--mixed-precision", "mixed_bfloat16",
                     "--strategy", "one_device", "--out", str(out), "--verbose", "0"])
    assert code == 0
    assert keras.config.dtype_policy().name == "float32"  # the global policy is put back
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["num_examples"] == 24 and 0.0 <= metrics["accuracy"] <= 1.0
    model = kbert.load_model(out)
    assert model.task.labels == ["negative", "positive"]  # the dataset's ClassLabel order
    # Feature-based: the encoder is frozen, so only the head moved.
    for trained, initial in zip(_weights(model.encoder), _weights(kbert.load_pretrained(tiny_init))):
        np.testing.assert_array_equal(trained, initial)
    assert model.encoder.trainable is False


def test_tfds_conll2003_tagging(tmp_path, tiny_init):
    with tfds.testing.mock_data(num_examples=16), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # mock tokens and tags have independent lengths: truncated
        result = finetune(TaggingTask(), FinetuneConfig(
            train="tfds:conll2003", validation="tfds:conll2003:test", out=str(tmp_path / "ner"),
            init=str(tiny_init), sequence_length=32, epochs=1, batch_size=8, verbose=0))
    names = ["O", "B-PER", "I-PER", "B-ORG", "I-ORG", "B-LOC", "I-LOC", "B-MISC", "I-MISC"]
    assert kbert.load_model(tmp_path / "ner").task.labels == names
    assert {"accuracy", "precision", "recall", "f1"} <= set(result["metrics"])
    assert result["metrics"]["num_examples"] == 16


def test_tfds_squad_question_answering(tmp_path, tiny_init):
    # Mock SQuAD offsets are random (they fail validation), so this one serves consistent rows.
    rows = [("q%d" % i, "the cat sat on the mat . the dog ran", "where did the cat sit ?", "on the mat", 12)
            for i in range(6)]

    def as_dataset(self, *args, **kwargs):
        return tf.data.Dataset.from_tensor_slices({
            "id": [r[0] for r in rows], "title": ["t"] * len(rows), "context": [r[1] for r in rows],
            "question": [r[2] for r in rows],
            "answers": {"text": [[r[3]] for r in rows], "answer_start": tf.constant([[r[4]] for r in rows])},
        })

    with tfds.testing.mock_data(as_dataset_fn=as_dataset):
        result = finetune(QuestionAnsweringTask(), FinetuneConfig(
            train="tfds:squad/v1.1", validation="tfds:squad/v1.1:validation", out=str(tmp_path / "qa"),
            init=str(tiny_init), sequence_length=32, epochs=1, batch_size=4, verbose=0))
    assert result["train_examples"] == 6 and result["metrics"]["num_examples"] == 6
    assert 0.0 <= result["metrics"]["exact_match"] <= 100.0


@pytest.mark.slow
def test_mirrored_strategy_over_two_logical_cpus(tmp_path, tiny_init):
    train = write_tsv(tmp_path / "train.tsv", ["text", "label"], keyword_rows(256, 4))
    dev = write_tsv(tmp_path / "dev.tsv", ["text", "label"], keyword_rows(64, 5))
    done = run_cli_on_logical_cpus(["finetune", "classify", "--init", tiny_init, "--train", train, "--validation",
                                    dev, "--sequence-length", 16, "--epochs", 6, "--batch-size", 16,
                                    "--learning-rate", 2e-3, "--strategy", "mirrored", "--out", tmp_path / "out",
                                    "--verbose", "0"])
    assert done.returncode == 0, done.stderr[-3000:]
    assert "2 replica(s)" in done.stdout
    metrics = json.loads((tmp_path / "out" / "metrics.json").read_text())
    assert metrics["accuracy"] >= 0.9
