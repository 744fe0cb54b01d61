"""MaskedAccuracy counts only positions whose label is not the ignore id."""

import numpy as np
import pytest

from kbert.metrics import MaskedAccuracy


def test_masked_accuracy_hand_computed():
    metric = MaskedAccuracy()
    labels = np.array([[1, -100, 0, 2], [-100, 2, -100, -100]])
    logits = np.zeros((2, 4, 3), dtype="float32")
    logits[0, 0, 1] = logits[0, 1, 0] = logits[0, 2, 1] = logits[0, 3, 2] = 1.0  # hits at (0,0), (0,3)
    logits[1, 1, 2] = logits[1, 0, 2] = 1.0  # hit at (1,1); (1,0) is ignored
    metric.update_state(labels, logits)
    assert float(metric.result()) == pytest.approx(3 / 4)
    metric.update_state(np.array([[0]]), np.array([[[0.0, 1.0]]], dtype="float32"))
    assert float(metric.result()) == pytest.approx(3 / 5)
    metric.reset_state()
    assert float(metric.result()) == 0.0


def test_custom_ignore_index_and_config():
    metric = MaskedAccuracy(ignore_index=0)
    metric.update_state(np.array([[0, 1]]), np.array([[[0.0, 1.0], [0.0, 1.0]]], dtype="float32"))
    assert float(metric.result()) == 1.0  # the position labelled 0 is skipped
    restored = MaskedAccuracy.from_config(metric.get_config())
    assert restored.ignore_index == 0


def test_inside_compiled_evaluate():
    keras = pytest.importorskip("keras")
    inputs = keras.Input((3, 2))
    model = keras.Model(inputs, keras.layers.Identity()(inputs))
    zero_loss = lambda y_true, y_pred: keras.ops.sum(y_pred, axis=(1, 2)) * 0.0  # noqa: E731
    model.compile(loss=zero_loss, metrics=[MaskedAccuracy()])
    logits = np.array([[[0, 1], [1, 0], [1, 0]], [[0, 1], [0, 1], [1, 0]]], dtype="float32")
    labels = np.array([[1, 1, -100], [-100, 1, 1]])  # counted: 4 positions, hits at (0,0) and (1,1)
    results = model.evaluate(logits, labels, batch_size=1, verbose=0, return_dict=True)
    assert results["masked_accuracy"] == pytest.approx(0.5)
