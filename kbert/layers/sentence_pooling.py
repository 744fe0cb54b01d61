"""`SentencePooling`: the token vectors of a sentence -> one vector, as sentence-transformers pools them."""

from __future__ import annotations

import keras
from keras import ops

from kbert.constants import POOLING_MODES


@keras.saving.register_keras_serializable(package="kbert")
class SentencePooling(keras.layers.Layer):
    """Pools the token vectors of each row into a sentence vector, over its real tokens only.

    The arithmetic is sentence-transformers' `Pooling` module's, mode for mode:

    - `mean`: the sum of the real tokens' vectors over their count (the count clamped at 1e-9);
    - `mean_sqrt_len_tokens`: the same sum over the square root of the (clamped) count;
    - `max`: the largest value of each dimension over the real tokens (padding set to -inf first);
    - `cls`: the first real token's vector, `[CLS]` (kbert pads on the right, so it is position 0).

    `[CLS]` and `[SEP]` are real tokens (`padding_mask` 1) and count in every mode, as they do there.
    Computed in float32 whatever the encoder's precision. Keras' `GlobalAveragePooling1D` /
    `GlobalMaxPooling1D` have no masked maximum and no square-root mean, hence a layer of its own.

    Args:
        mode: str. One of `kbert.constants.POOLING_MODES`: "mean", "cls", "max", "mean_sqrt_len_tokens".

    Call arguments:
        sequence_output: `(batch, seq, hidden)` token vectors.
        padding_mask: `(batch, seq)`, 1 (or True) at real tokens, 0 at padding.

    Returns:
        `(batch, hidden)` float32 sentence vectors.

    Example:
    >>> import numpy as np
    >>> tokens = np.array([[[1.0, 2.0], [3.0, 6.0], [9.0, 9.0]]])   # the last position is padding
    >>> mask = np.array([[1, 1, 0]])
    >>> SentencePooling("mean")(tokens, mask).numpy().tolist()
    [[2.0, 4.0]]
    >>> SentencePooling("max")(tokens, mask).numpy().tolist()
    [[3.0, 6.0]]
    """

    def __init__(self, mode: str = "mean", **kwargs):
        if mode not in POOLING_MODES:
            raise ValueError(f"pooling mode {mode!r} is not one of {POOLING_MODES}")
        kwargs.setdefault("dtype", "float32")
        super().__init__(**kwargs)
        self.mode = mode

    def call(self, sequence_output, padding_mask):
        tokens = ops.cast(sequence_output, "float32")
        if self.mode == "cls":
            return tokens[:, 0]
        mask = ops.expand_dims(ops.cast(padding_mask, "float32"), -1)  # (batch, seq, 1)
        if self.mode == "max":
            return ops.max(ops.where(mask > 0, tokens, float("-inf")), axis=1)
        total = ops.sum(tokens * mask, axis=1)
        count = ops.maximum(ops.sum(mask, axis=1), 1e-9)
        return total / (count if self.mode == "mean" else ops.sqrt(count))

    def compute_output_shape(self, sequence_output_shape, padding_mask_shape=None):
        return (sequence_output_shape[0], sequence_output_shape[-1])

    def get_config(self) -> dict:
        return {**super().get_config(), "mode": self.mode}
