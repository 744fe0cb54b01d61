"""Every model, named as users name it (`kbert.X`), through the shared standard checks.

Each model kbert exports, regression and every pretraining objective included, in one list; the layers
are checked in tests/layers.
"""

import numpy as np
import pytest

import kbert
from layer_checks import run_standard_checks

VOCAB, SEQ, PREDICTIONS = 24, 8, 2


def encoder():
    return kbert.BertEncoder(vocab_size=VOCAB, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                             intermediate_size=32, max_position_embeddings=16)


def inputs():
    rng = np.random.default_rng(0)
    token_ids = rng.integers(5, VOCAB, size=(2, SEQ)).astype("int32")
    token_ids[:, 0], token_ids[:, -1] = 2, 3  # [CLS] ... [SEP]
    padding_mask = np.ones((2, SEQ), "int32")
    padding_mask[1, SEQ - 2:] = 0
    return {"token_ids": token_ids, "segment_ids": np.zeros((2, SEQ), "int32"), "padding_mask": padding_mask}


def test_encoder():
    run_standard_checks(encoder(), inputs())


@pytest.mark.parametrize("make, targets", [
    (lambda e: kbert.BertClassifier(e, num_classes=3), np.array([0, 2], "int32")),
    (lambda e: kbert.BertClassifier(e, num_classes=1), np.array([[0.5], [-1.0]], "float32")),  # regression
    (lambda e: kbert.BertTokenClassifier(e, num_labels=4), np.array([[-100, 1, 2, 3, 0, 1, 2, -100]] * 2)),
    (lambda e: kbert.BertQuestionAnswerer(e), {"start_logits": np.array([1, 2]), "end_logits": np.array([2, 3])}),
], ids=["classifier", "regressor", "token_classifier", "question_answerer"])
def test_task_models(make, targets):
    model = make(encoder())
    model.compile()
    run_standard_checks(model, inputs(), fit_targets=targets)


@pytest.mark.parametrize("objective", ["nsp", "sop", "none"])
def test_pretrainer(objective):
    """The labels travel in the features (`fit(features)`); the network reads only its four inputs."""
    model = kbert.BertPretrainer(encoder(), objective=objective)
    model.compile()
    x = {**inputs(), "masked_positions": np.array([[1, 3], [2, 0]], "int32")}
    labels = {"masked_ids": np.array([[7, 9], [11, 0]], "int32"),
              "masked_weights": np.array([[1.0, 1.0], [1.0, 0.0]], "float32"),
              "next_sentence_label": np.array([0, 1], "int32")}
    run_standard_checks(model, x, fit_inputs={**x, **labels})
    assert model.get_config()["objective"] == objective
