"""The distances a distilled student is trained on: the teacher's soft targets, or its vectors.

Each task's `distillation_loss` (`kbert.tasks.base.Task`) is one of these applied to its own outputs:
classification to its logits, tagging to each real token's logits, QA to the start and to the end
distribution, regression and embeddings to the teacher's numbers themselves.
"""

from __future__ import annotations

import keras
import tensorflow as tf


def soft_target_kl(teacher_logits: tf.Tensor, student_logits: tf.Tensor, temperature: float,
                   mask: tf.Tensor | None = None) -> tf.Tensor:
    """KL(teacher_T || student_T) * T^2, averaged over rows (or over the rows `mask` keeps).

    softmax(logits / T) over the last axis on both sides (Hinton et al. 2015); T^2 keeps the gradient's scale
    independent of T. Written from `log_softmax` rather than with `keras.losses.KLDivergence`, which takes
    probabilities and clips them at 1e-7: where the student gives a class the teacher likes less than that,
    the clipped loss has no gradient at all.

    Args:
        teacher_logits: float tensor (..., classes); no gradient flows into it.
        student_logits: float tensor of the same shape.
        temperature: float > 0.
        mask: optional tensor of the leading shape (...): 1 for rows that count (real tokens), 0 otherwise.

    Returns:
        A float32 scalar.

    Example:
    >>> import numpy as np
    >>> same = np.array([[2.0, 0.0, -1.0]], np.float32)
    >>> float(soft_target_kl(same, same, 2.0))
    0.0
    """
    t = tf.stop_gradient(tf.cast(teacher_logits, tf.float32)) / temperature
    s = tf.cast(student_logits, tf.float32) / temperature
    log_t, log_s = tf.nn.log_softmax(t, axis=-1), tf.nn.log_softmax(s, axis=-1)
    per_row = tf.reduce_sum(tf.exp(log_t) * (log_t - log_s), axis=-1) * temperature ** 2
    if mask is None:
        return tf.reduce_mean(per_row)
    mask = tf.cast(mask, tf.float32)
    return tf.reduce_sum(per_row * mask) / tf.maximum(tf.reduce_sum(mask), 1.0)


def vector_mse(teacher_vectors: tf.Tensor, student_vectors: tf.Tensor) -> tf.Tensor:
    """The mean squared difference of the student's vectors (or scores) from the teacher's: Keras' MSE.

    Raises:
        ValueError: the two are of different widths (an embedding student narrower than its teacher).
    """
    if teacher_vectors.shape[-1] != student_vectors.shape[-1]:
        raise ValueError(f"the student's outputs are {student_vectors.shape[-1]} wide, the teacher's "
                         f"{teacher_vectors.shape[-1]}: their vectors can only be compared at the same width")
    teacher = tf.stop_gradient(tf.cast(teacher_vectors, tf.float32))
    return keras.losses.MeanSquaredError()(teacher, tf.cast(student_vectors, tf.float32))
