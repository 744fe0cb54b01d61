"""LAMB (You et al. 2019) with gradient accumulation that works under tf.distribute."""

from __future__ import annotations

import keras

from kbert.optim.accumulation import GradientAccumulation


@keras.saving.register_keras_serializable(package="kbert")
class Lamb(GradientAccumulation, keras.optimizers.Lamb):
    """`keras.optimizers.Lamb`, accumulating gradients as `GradientAccumulation` does.

    Args:
        gradient_accumulation_steps: int or None. Batches per update.
        **kwargs: the arguments of `keras.optimizers.Lamb`.

    Example:
    >>> Lamb(learning_rate=1e-3, gradient_accumulation_steps=2).accumulation_steps
    2
    """
