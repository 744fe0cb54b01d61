"""BERT's learning-rate schedule: linear warmup, then linear decay to zero.

Keras ships warmup only inside `CosineDecay`, and `PolynomialDecay` has no warmup, so the BERT
schedule (google-research/bert `optimization.py`: polynomial decay of power 1 to 0 over
`num_train_steps`, with a linear warmup over the first `warmup_steps` replacing it) is written here.
"""

from __future__ import annotations

from typing import Any

import keras
from keras import ops


@keras.saving.register_keras_serializable(package="kbert")
class LinearWarmupLinearDecay(keras.optimizers.schedules.LearningRateSchedule):
    """Linear warmup from 0 to `learning_rate`, then linear decay to 0 at `num_train_steps`.

    With `u` the number of optimizer updates done so far (the step):

    - `u < warmup_steps`: `learning_rate * u / warmup_steps`;
    - otherwise: `learning_rate * max(0, 1 - u / num_train_steps)`.

    This is the schedule of the original BERT `optimization.py`, where the warmup value replaces
    the decayed value while `u < warmup_steps` (so the decay is measured from step 0, not from the
    end of the warmup).

    Args:
        learning_rate: float. The rate the warmup ramps towards and the decay starts from (the
            schedule's maximum is `learning_rate * (1 - warmup_steps / num_train_steps)`).
        num_train_steps: int. Step at which the rate reaches 0 (and stays there).
        warmup_steps: int. Number of warmup steps; 0 disables the warmup.
        gradient_accumulation_steps: int. For Keras' own `gradient_accumulation_steps`, whose
            iteration counter counts batches: the schedule divides it by `k` (integer division) so
            that `num_train_steps` and `warmup_steps` count optimizer updates. Keep 1 with kbert's
            optimizers (`kbert.optim`), which count updates only.

    Call arguments:
        step: int or scalar tensor. The optimizer's `iterations`.

    Returns:
        A float32 scalar tensor: the learning rate at `step`.

    Example:
    >>> schedule = LinearWarmupLinearDecay(1e-4, num_train_steps=100, warmup_steps=10)
    >>> round(float(schedule(5)), 10), round(float(schedule(10)), 10), float(schedule(100))
    (5e-05, 9e-05, 0.0)
    """

    def __init__(
        self,
        learning_rate: float,
        num_train_steps: int,
        warmup_steps: int = 0,
        gradient_accumulation_steps: int = 1,
    ) -> None:
        if learning_rate <= 0:
            raise ValueError(f"learning_rate must be > 0, got {learning_rate}")
        if num_train_steps <= 0:
            raise ValueError(f"num_train_steps must be > 0, got {num_train_steps}")
        if not 0 <= warmup_steps <= num_train_steps:
            raise ValueError(
                f"warmup_steps must be in [0, num_train_steps={num_train_steps}], got {warmup_steps}"
            )
        if gradient_accumulation_steps < 1:
            raise ValueError(
                f"gradient_accumulation_steps must be >= 1, got {gradient_accumulation_steps}"
            )
        self.learning_rate = float(learning_rate)
        self.num_train_steps = int(num_train_steps)
        self.warmup_steps = int(warmup_steps)
        self.gradient_accumulation_steps = int(gradient_accumulation_steps)

    def __call__(self, step: Any) -> Any:
        step = ops.cast(step, "int64") // self.gradient_accumulation_steps
        step = ops.cast(step, "float32")
        peak = ops.cast(self.learning_rate, "float32")
        decay = peak * ops.maximum(0.0, 1.0 - step / float(self.num_train_steps))
        if self.warmup_steps == 0:
            return decay
        warmup = peak * step / float(self.warmup_steps)
        return ops.where(step < float(self.warmup_steps), warmup, decay)

    def get_config(self) -> dict[str, Any]:
        return {
            "learning_rate": self.learning_rate,
            "num_train_steps": self.num_train_steps,
            "warmup_steps": self.warmup_steps,
            "gradient_accumulation_steps": self.gradient_accumulation_steps,
        }
