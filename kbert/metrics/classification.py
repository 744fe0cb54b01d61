"""GLUE metrics: accuracy, F1 (binary and macro), Matthews correlation, Pearson and Spearman correlation.

Written in numpy rather than taken from scikit-learn or scipy: these are closed-form formulas of a few
lines each, and neither library is a runtime dependency of kbert. The tests compare against both.

All functions take plain sequences (lists, numpy arrays) of labels or scores and return Python floats.
Classification scores are fractions in [0, 1] (GLUE papers print them x100).
"""

from __future__ import annotations

from typing import Any, Hashable, Sequence

import numpy as np


def _pair(y_true: Sequence[Any], y_pred: Sequence[Any]) -> tuple[np.ndarray, np.ndarray]:
    true = np.asarray(y_true)
    pred = np.asarray(y_pred)
    if true.ndim != 1 or pred.ndim != 1:
        raise ValueError(f"expected 1-D label sequences, got shapes {true.shape} and {pred.shape}")
    if len(true) != len(pred):
        raise ValueError(f"y_true has {len(true)} items but y_pred has {len(pred)}")
    if len(true) == 0:
        raise ValueError("cannot score an empty set of predictions")
    return true, pred


def accuracy(y_true: Sequence[Hashable], y_pred: Sequence[Hashable]) -> float:
    """Fraction of predictions equal to the true label.

    Args:
        y_true: sequence. Gold labels (ints or strings).
        y_pred: sequence. Predicted labels, same length.

    Returns:
        float in [0, 1].

    Example:
    >>> accuracy([0, 1, 1, 0], [0, 1, 0, 0])
    0.75
    """
    true, pred = _pair(y_true, y_pred)
    return float(np.mean(true == pred))


def _binary_f1(true: np.ndarray, pred: np.ndarray, positive: Hashable) -> float:
    tp = float(np.sum((pred == positive) & (true == positive)))
    fp = float(np.sum((pred == positive) & (true != positive)))
    fn = float(np.sum((pred != positive) & (true == positive)))
    # 2TP / (2TP + FP + FN) equals 2PR / (P + R); defined as 0 when there is nothing to find or predict.
    denominator = 2 * tp + fp + fn
    return 2 * tp / denominator if denominator else 0.0


def f1_score(
    y_true: Sequence[Hashable],
    y_pred: Sequence[Hashable],
    *,
    average: str = "binary",
    positive_label: Hashable = 1,
    labels: Sequence[Hashable] | None = None,
) -> float:
    """F1 of a classifier: binary (the MRPC / QQP metric) or macro-averaged over classes.

    Args:
        y_true: sequence. Gold labels.
        y_pred: sequence. Predicted labels, same length.
        average: str. "binary": F1 of `positive_label`. "macro": unweighted mean of per-class F1 over
            `labels` (default: every label seen in `y_true` or `y_pred`).
        positive_label: the positive class for `average="binary"`.
        labels: optional sequence. Classes averaged over for `average="macro"`.

    Returns:
        float in [0, 1]. A class never predicted and never present scores 0 (as scikit-learn's
        `zero_division=0`).

    Example:
    >>> round(f1_score([1, 1, 0, 0], [1, 0, 1, 0]), 4)
    0.5
    """
    true, pred = _pair(y_true, y_pred)
    if average == "binary":
        return _binary_f1(true, pred, positive_label)
    if average == "macro":
        classes = list(labels) if labels is not None else sorted(set(true.tolist()) | set(pred.tolist()))
        return float(np.mean([_binary_f1(true, pred, c) for c in classes]))
    raise ValueError(f"average must be 'binary' or 'macro', got {average!r}")


def matthews_corrcoef(y_true: Sequence[Hashable], y_pred: Sequence[Hashable]) -> float:
    """Matthews correlation coefficient (the CoLA metric), in its multi-class form (Gorodkin 2004).

    Args:
        y_true: sequence. Gold labels.
        y_pred: sequence. Predicted labels, same length.

    Returns:
        float in [-1, 1]; 0 when either side holds a single class (the formula's denominator is 0).

    Example:
    >>> round(matthews_corrcoef([1, 1, 0, 0], [1, 0, 0, 0]), 4)
    0.5774
    """
    true, pred = _pair(y_true, y_pred)
    classes = sorted(set(true.tolist()) | set(pred.tolist()))
    index = {c: i for i, c in enumerate(classes)}
    confusion = np.zeros((len(classes), len(classes)), dtype=np.float64)
    for t, p in zip(true.tolist(), pred.tolist()):
        confusion[index[t], index[p]] += 1
    n = confusion.sum()
    correct = np.trace(confusion)
    true_totals = confusion.sum(axis=1)
    pred_totals = confusion.sum(axis=0)
    covariance = correct * n - np.dot(true_totals, pred_totals)
    pred_spread = n * n - np.dot(pred_totals, pred_totals)
    true_spread = n * n - np.dot(true_totals, true_totals)
    denominator = np.sqrt(pred_spread * true_spread)
    return float(covariance / denominator) if denominator else 0.0


def pearson(x: Sequence[float], y: Sequence[float]) -> float:
    """Pearson correlation coefficient (an STS-B metric).

    Args:
        x: sequence of floats.
        y: sequence of floats, same length.

    Returns:
        float in [-1, 1]; nan when either side is constant.

    Example:
    >>> pearson([1.0, 2.0, 3.0], [2.0, 4.0, 6.5])  # doctest: +ELLIPSIS
    0.99...
    """
    a, b = _pair(x, y)
    a = a.astype(np.float64) - np.mean(a.astype(np.float64))
    b = b.astype(np.float64) - np.mean(b.astype(np.float64))
    denominator = np.sqrt(np.dot(a, a) * np.dot(b, b))
    return float(np.dot(a, b) / denominator) if denominator else float("nan")


def _average_ranks(values: np.ndarray) -> np.ndarray:
    """1-based ranks, ties sharing the mean of the ranks they span."""
    order = np.argsort(values, kind="mergesort")
    sorted_values = values[order]
    ranks = np.empty(len(values), dtype=np.float64)
    start = 0
    while start < len(values):
        stop = start
        while stop + 1 < len(values) and sorted_values[stop + 1] == sorted_values[start]:
            stop += 1
        ranks[order[start : stop + 1]] = (start + stop) / 2.0 + 1.0
        start = stop + 1
    return ranks


def spearman(x: Sequence[float], y: Sequence[float]) -> float:
    """Spearman rank correlation (an STS-B metric): `pearson` applied to tie-averaged ranks.

    Args:
        x, y: two sequences of floats of one length (predictions and gold scores, in either order).

    Returns:
        The rank correlation, a float in [-1, 1] (nan if all of x or all of y are equal).

    Example:
    >>> spearman([1.0, 2.0, 3.0], [1.0, 10.0, 100.0])
    1.0
    """
    a, b = _pair(x, y)
    return pearson(_average_ranks(a.astype(np.float64)), _average_ranks(b.astype(np.float64)))


def classification_metrics(
    y_true: Sequence[Hashable], y_pred: Sequence[Hashable], *, positive_label: Hashable = 1
) -> dict[str, float]:
    """The usual GLUE classification metrics in one dict.

    Args:
        y_true: sequence. Gold labels.
        y_pred: sequence. Predicted labels.
        positive_label: the positive class for binary F1 (used when there are at most two classes). With
            two classes present it must be one of them, else ValueError (string labels need it named).

    Returns:
        dict with "accuracy", "f1" (binary F1 of `positive_label` with two classes or fewer, macro F1
        otherwise), "macro_f1" and "matthews_corrcoef".

    Example:
    >>> classification_metrics([0, 1], [0, 1])["accuracy"]
    1.0
    """
    true, pred = _pair(y_true, y_pred)
    classes = set(true.tolist()) | set(pred.tolist())
    binary = len(classes) <= 2
    if len(classes) == 2 and positive_label not in classes:
        raise ValueError(
            f"positive_label {positive_label!r} is not one of the labels {sorted(classes, key=str)}; "
            "pass the positive class as positive_label="
        )
    return {
        "accuracy": accuracy(true, pred),
        "f1": f1_score(true, pred, average="binary" if binary else "macro", positive_label=positive_label),
        "macro_f1": f1_score(true, pred, average="macro"),
        "matthews_corrcoef": matthews_corrcoef(true, pred),
    }


def regression_metrics(y_true: Sequence[float], y_pred: Sequence[float]) -> dict[str, float]:
    """STS-B metrics: Pearson and Spearman correlation and mean squared error.

    Args:
        y_true: sequence of gold scores.
        y_pred: sequence of predicted scores.

    Returns:
        dict with "pearson", "spearman" and "mse".

    Example:
    >>> regression_metrics([0.0, 1.0, 2.0], [0.0, 1.0, 2.0])["spearman"]
    1.0
    """
    true, pred = _pair(y_true, y_pred)
    true = true.astype(np.float64)
    pred = pred.astype(np.float64)
    return {
        "pearson": pearson(true, pred),
        "spearman": spearman(true, pred),
        "mse": float(np.mean((true - pred) ** 2)),
    }
