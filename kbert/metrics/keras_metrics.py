"""`MaskedAccuracy`: a Keras metric for token accuracy that skips ignored positions.

Keras' `SparseCategoricalAccuracy` counts every position unless a `sample_weight` is built for it; BERT's
token tasks mark positions to skip in the labels themselves (-100 for word-piece continuations and special
tokens, the convention the Hugging Face models use), so this metric derives the mask from the labels.
"""

from __future__ import annotations

from typing import Any

import keras
from keras import ops

from kbert.constants import IGNORE_LABEL


@keras.saving.register_keras_serializable(package="kbert")
class MaskedAccuracy(keras.metrics.Metric):
    """Accuracy of argmax predictions over the positions whose label is not `ignore_index`.

    Args:
        ignore_index: int. Label value that marks a position to skip (default
            `kbert.constants.IGNORE_LABEL`, -100).
        name: str. Metric name.
        dtype: optional dtype of the metric's variables.

    Call arguments (`update_state`):
        y_true: int tensor (batch, seq). Label ids, `ignore_index` where not scored.
        y_pred: float tensor (batch, seq, num_labels). Logits or probabilities.
        sample_weight: optional tensor broadcastable to (batch, seq), multiplied into the mask.

    Returns:
        `result()`: scalar, correct / counted positions (0 when none is counted).

    Example:
    >>> m = MaskedAccuracy()
    >>> m.update_state([[1, -100]], [[[0.1, 0.9], [0.9, 0.1]]])
    >>> float(m.result())
    1.0
    """

    def __init__(self, ignore_index: int = IGNORE_LABEL, name: str = "masked_accuracy", dtype: Any = None) -> None:
        super().__init__(name=name, dtype=dtype)
        self.ignore_index = ignore_index
        self.correct = self.add_variable(shape=(), initializer="zeros", name="correct")
        self.counted = self.add_variable(shape=(), initializer="zeros", name="counted")

    def update_state(self, y_true: Any, y_pred: Any, sample_weight: Any = None) -> None:
        y_true = ops.convert_to_tensor(y_true)
        y_pred = ops.convert_to_tensor(y_pred)
        if len(y_true.shape) == len(y_pred.shape):  # labels given as (batch, seq, 1)
            y_true = ops.squeeze(y_true, axis=-1)
        y_true = ops.cast(y_true, "int32")
        predicted = ops.cast(ops.argmax(y_pred, axis=-1), "int32")
        mask = ops.cast(ops.not_equal(y_true, self.ignore_index), self.dtype)
        if sample_weight is not None:
            mask = mask * ops.cast(sample_weight, self.dtype)
        hits = ops.cast(ops.equal(y_true, predicted), self.dtype) * mask
        self.correct.assign_add(ops.sum(hits))
        self.counted.assign_add(ops.sum(mask))

    def result(self) -> Any:
        return ops.divide_no_nan(self.correct, self.counted)

    def reset_state(self) -> None:
        self.correct.assign(0.0)
        self.counted.assign(0.0)

    def get_config(self) -> dict[str, Any]:
        config = super().get_config()
        config.update(ignore_index=self.ignore_index)
        return config
