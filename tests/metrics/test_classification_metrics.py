"""GLUE metrics against hand-computed values, and against scikit-learn / scipy where installed."""

import math

import numpy as np
import pytest

from kbert.metrics import accuracy, classification_metrics, f1_score, matthews_corrcoef
from kbert.metrics import pearson, regression_metrics, spearman


def test_accuracy_hand_computed():
    assert accuracy([0, 1, 1, 0, 1], [0, 1, 0, 0, 0]) == pytest.approx(0.6)
    assert accuracy(["pos", "neg"], ["pos", "pos"]) == pytest.approx(0.5)


def test_binary_f1_hand_computed():
    # tp=2, fp=1, fn=1 -> P = R = 2/3 -> F1 = 2/3
    assert f1_score([1, 1, 1, 0, 0, 0], [1, 1, 0, 1, 0, 0]) == pytest.approx(2 / 3)
    # The same data scored for class 0: tp=2, fp=1, fn=1 as well; and a class never predicted scores 0.
    assert f1_score([1, 1, 1, 0, 0, 0], [1, 1, 0, 1, 0, 0], positive_label=0) == pytest.approx(2 / 3)
    assert f1_score([1, 1, 0], [0, 0, 0]) == 0.0


def test_macro_f1_hand_computed():
    # per class: 0 -> tp1 fp1 fn1 = 0.5; 1 -> tp2 fp1 fn0 = 0.8; 2 -> tp1 fp0 fn1 = 2/3
    value = f1_score([0, 0, 1, 1, 2, 2], [0, 1, 1, 1, 2, 0], average="macro")
    assert value == pytest.approx((0.5 + 0.8 + 2 / 3) / 3)


def test_matthews_hand_computed():
    # TP=1 TN=2 FP=0 FN=1: (1*2 - 0*1) / sqrt(1*2*2*3)
    assert matthews_corrcoef([1, 1, 0, 0], [1, 0, 0, 0]) == pytest.approx(2 / math.sqrt(12))
    assert matthews_corrcoef([1, 0, 1], [1, 0, 1]) == pytest.approx(1.0)
    assert matthews_corrcoef([1, 0, 1], [0, 1, 0]) == pytest.approx(-1.0)
    assert matthews_corrcoef([1, 0, 1], [1, 1, 1]) == 0.0  # constant prediction: denominator 0


def test_pearson_and_spearman_hand_computed():
    # dx = [-1.5, -.5, .5, 1.5], dy = [-3, -1, 0, 4]: 11 / sqrt(5 * 26)
    assert pearson([1, 2, 3, 4], [2, 4, 5, 9]) == pytest.approx(11 / math.sqrt(130))
    # ranks with a tie: x -> [1, 2.5, 2.5, 4], y -> [1, 3, 2, 4]: 4.5 / sqrt(4.5 * 5)
    assert spearman([1, 2, 2, 3], [1, 3, 2, 4]) == pytest.approx(4.5 / math.sqrt(22.5))
    assert spearman([1, 2, 3], [1, 10, 100]) == pytest.approx(1.0)  # monotone, not linear
    assert math.isnan(pearson([1, 1, 1], [1, 2, 3]))


def test_summary_dicts():
    scores = classification_metrics([1, 1, 1, 0, 0, 0], [1, 1, 0, 1, 0, 0])
    assert scores["accuracy"] == pytest.approx(4 / 6)
    assert scores["f1"] == pytest.approx(2 / 3)
    assert scores["matthews_corrcoef"] == pytest.approx((2 * 2 - 1 * 1) / math.sqrt(3 * 3 * 3 * 3))
    three = classification_metrics([0, 0, 1, 1, 2, 2], [0, 1, 1, 1, 2, 0])
    assert three["f1"] == pytest.approx(three["macro_f1"])
    with pytest.raises(ValueError, match="positive_label"):
        classification_metrics(["neg", "pos"], ["pos", "pos"])
    assert classification_metrics(["neg", "pos"], ["pos", "pos"], positive_label="pos")["f1"] == pytest.approx(
        2 / 3
    )
    regression = regression_metrics([0.0, 1.0, 2.0], [0.0, 1.0, 3.0])
    assert regression["mse"] == pytest.approx(1 / 3)
    assert regression["spearman"] == pytest.approx(1.0)


def test_bad_inputs():
    with pytest.raises(ValueError, match="2 items"):
        accuracy([1, 0], [1])
    with pytest.raises(ValueError, match="empty"):
        accuracy([], [])
    with pytest.raises(ValueError, match="average"):
        f1_score([1], [1], average="micro")


def test_against_sklearn_and_scipy():
    metrics = pytest.importorskip("sklearn.metrics")
    stats = pytest.importorskip("scipy.stats")
    rng = np.random.default_rng(0)
    for _ in range(5):
        y_true = rng.integers(0, 3, size=50)
        y_pred = np.where(rng.random(50) < 0.6, y_true, rng.integers(0, 3, size=50))
        assert accuracy(y_true, y_pred) == pytest.approx(metrics.accuracy_score(y_true, y_pred))
        assert f1_score(y_true, y_pred, average="macro") == pytest.approx(
            metrics.f1_score(y_true, y_pred, average="macro", zero_division=0)
        )
        assert matthews_corrcoef(y_true, y_pred) == pytest.approx(metrics.matthews_corrcoef(y_true, y_pred))
        binary_true, binary_pred = y_true % 2, y_pred % 2
        assert f1_score(binary_true, binary_pred) == pytest.approx(metrics.f1_score(binary_true, binary_pred))
        assert matthews_corrcoef(binary_true, binary_pred) == pytest.approx(
            metrics.matthews_corrcoef(binary_true, binary_pred)
        )
        x = rng.normal(size=40)
        y = np.round(x + rng.normal(size=40), 1)  # rounding makes ties
        assert pearson(x, y) == pytest.approx(stats.pearsonr(x, y)[0])
        assert spearman(np.round(x, 1), y) == pytest.approx(stats.spearmanr(np.round(x, 1), y)[0])
