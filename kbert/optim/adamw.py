"""AdamW with the update rule of PyTorch and Hugging Face, or of Google's original BERT."""

from __future__ import annotations

from typing import Any

import keras
import tensorflow as tf
from keras import ops

from kbert.optim.accumulation import GradientAccumulation


@keras.saving.register_keras_serializable(package="kbert")
class AdamW(GradientAccumulation, keras.optimizers.AdamW):
    """Adam with decoupled weight decay, epsilon added where PyTorch adds it.

    With gradient `g`, step `t` (1 at the first update), rate `lr` and weight decay `wd`, each variable
    `p` (not excluded from weight decay) is updated as `torch.optim.AdamW` does:

        p <- p * (1 - lr * wd)                                   # decoupled decay, before the step
        m <- beta_1 * m + (1 - beta_1) * g
        v <- beta_2 * v + (1 - beta_2) * g^2
        p <- p - lr * m_hat / (sqrt(v_hat) + epsilon)            # m_hat = m / (1 - beta_1^t),
                                                                 # v_hat = v / (1 - beta_2^t)

    `keras.optimizers.AdamW` instead adds epsilon to the square root of the biased `v` (folding the bias
    correction into the rate), so its epsilon is larger by `1 / sqrt(1 - beta_2^t)`: 32x at step 1 with
    BERT's beta_2 = 0.999, which damps the first updates of weights with small gradients.

    With `bias_correction=False` the rule is Google's `AdamWeightDecayOptimizer` (google-research/bert
    `optimization.py`): `p <- p - lr * (m / (sqrt(v) + epsilon) + wd * p)`, no bias correction. The decay
    term uses `p` before the step there too, so it equals the decay-then-step order above.

    The bias corrections are computed in float64, as PyTorch does with Python floats: in float32,
    `1 - 0.999^t` loses 4 digits at small `t`.

    The Adam step runs as TensorFlow's fused `ResourceApplyAdam` kernel, one pass over each variable and
    its two moments instead of a dozen element-wise ops. The update of all-MiniLM-L6-v2's 22.7 million
    weights, clipping included, takes 42 ms on a 2-core CPU against 79 with Keras' AdamW and 71 with
    `torch.optim.AdamW` (BENCHMARKS.md, `benchmarks.finetune_step`), and traces in half the time. The
    kernel adds epsilon where Keras does, so it gets the equivalent rate and epsilon,
    `lr * m_hat / (sqrt(v_hat) + eps) = lr_t * m / (sqrt(v) + eps_t)` with
    `lr_t = lr * sqrt(1 - beta_2^t) / (1 - beta_1^t)` and `eps_t = eps * sqrt(1 - beta_2^t)`, and beta
    powers of 0, so it applies no correction of its own. One constant differs from PyTorch's in float32:
    the kernel weighs `g^2` by `1 - beta_2` computed in float32 (0.00099998713 for 0.999), PyTorch by
    0.001; over 100 steps the weights stay within 5e-7 relative of `torch.optim.AdamW`'s.

    Args:
        learning_rate: float or `keras.optimizers.schedules.LearningRateSchedule`.
        weight_decay: float. Decoupled weight decay rate; see `exclude_from_weight_decay`.
        beta_1: float. First-moment decay.
        beta_2: float. Second-moment decay.
        epsilon: float. Added to the square root of the (bias-corrected) second moment.
        bias_correction: bool. True: PyTorch / Hugging Face AdamW. False: Google's original BERT optimizer.
        gradient_accumulation_steps: int or None. Batches per update (see `GradientAccumulation`).
        **kwargs: other Keras optimizer arguments (`global_clipnorm`, `name`, ...).

    Example:
    >>> p = keras.Variable([1.0, -1.0])
    >>> optimizer = AdamW(learning_rate=0.1, weight_decay=0.0)
    >>> _ = optimizer.apply_gradients([(keras.ops.convert_to_tensor([0.5, -2.0]), p)])
    >>> [round(float(x), 4) for x in p.numpy()]   # the first step moves each weight by lr
    [0.9, -0.9]
    """

    def __init__(
        self,
        learning_rate: float | keras.optimizers.schedules.LearningRateSchedule = 1e-3,
        weight_decay: float = 0.01,
        beta_1: float = 0.9,
        beta_2: float = 0.999,
        epsilon: float = 1e-6,
        bias_correction: bool = True,
        gradient_accumulation_steps: int | None = None,
        name: str = "adamw",
        **kwargs: Any,
    ) -> None:
        if kwargs.get("amsgrad"):
            raise ValueError("kbert's AdamW has no AMSGrad variant")
        super().__init__(
            learning_rate=learning_rate, weight_decay=weight_decay, beta_1=beta_1, beta_2=beta_2,
            epsilon=epsilon, gradient_accumulation_steps=gradient_accumulation_steps, name=name, **kwargs,
        )
        self.bias_correction = bool(bias_correction)

    def _apply_weight_decay(self, variables: list) -> None:
        # The decay is part of `update_step`, in PyTorch's form `p * (1 - lr * wd)`.
        return None

    def _backend_update_step(self, grads: list, trainable_variables: list, learning_rate: Any) -> None:
        # The step's scalars once for all variables, not once per variable: the same numbers, and far
        # fewer ops to trace (per variable they were 3.4 s of a 6.1 s all-MiniLM-L6-v2 train-step trace).
        self._scalars = self._step_scalars(learning_rate)
        # And the kernel's scalars once per dtype: 8 fewer ops a variable in the traced step (840 of
        # all-MiniLM-L6-v2's 2,111 update ops), computed here, outside any replica's update context.
        dtypes = {tf.as_dtype(v.dtype).name for v in trainable_variables}
        self._kernel_scalars = {dtype: self._scalars_in(dtype, self._scalars) for dtype in dtypes}
        try:
            super()._backend_update_step(grads, trainable_variables, learning_rate)
        finally:
            self._scalars = self._kernel_scalars = None

    def _step_scalars(self, learning_rate: Any) -> tuple[Any, Any, Any]:
        """(1 - lr * wd, step size, sqrt of the second moment's bias correction or None), in float64."""
        # Python floats straight to float64: `ops.cast(0.999, "float64")` would round through float32.
        rate = ops.cast(learning_rate, "float64")
        keep = 1.0 - rate * float(self.weight_decay)  # as PyTorch computes it from Python floats
        if not self.bias_correction:
            return keep, rate, None
        step = ops.cast(self.iterations + 1, "float64")
        first = 1.0 - ops.power(ops.convert_to_tensor(self.beta_1, "float64"), step)
        second = 1.0 - ops.power(ops.convert_to_tensor(self.beta_2, "float64"), step)
        return keep, rate / first, ops.sqrt(second)

    def _scalars_in(self, dtype: Any, scalars: tuple[Any, Any, Any]) -> dict[str, Any]:
        """The decay factor and `ResourceApplyAdam`'s scalar arguments, in `dtype`."""
        keep, step_size, second_root = scalars
        # The kernel's rate and epsilon that give the bias-corrected rule (class docstring); its own beta
        # powers are 0, so it corrects nothing itself.
        rate, epsilon = step_size, self.epsilon
        if second_root is not None:
            rate, epsilon = step_size * second_root, epsilon * second_root
        zero = tf.constant(0.0, dtype)
        return {"keep": ops.cast(keep, dtype), "lr": ops.cast(rate, dtype), "epsilon": ops.cast(epsilon, dtype),
                "beta1": tf.constant(self.beta_1, dtype), "beta2": tf.constant(self.beta_2, dtype),
                "beta1_power": zero, "beta2_power": zero}

    def update_step(self, gradient: Any, variable: Any, learning_rate: Any) -> None:
        """Decays `variable` (unless excluded), then takes one Adam step on it."""
        dtype = tf.as_dtype(variable.dtype).name  # a Keras variable's dtype is a str, a tf.Variable's a DType
        kernel_scalars = getattr(self, "_kernel_scalars", None) or {}
        if dtype in kernel_scalars:
            scalars = dict(kernel_scalars[dtype])
        else:
            cached = getattr(self, "_scalars", None)
            scalars = self._scalars_in(dtype, cached if cached is not None else self._step_scalars(learning_rate))
        keep = scalars.pop("keep")
        if self.weight_decay and self._use_weight_decay(variable):
            self.assign(variable, variable * keep)
        index = self._get_variable_index(variable)
        m, v = self._momentums[index], self._velocities[index]
        tf.raw_ops.ResourceApplyAdam(var=_handle(variable), m=_handle(m), v=_handle(v),
                                     grad=ops.cast(tf.convert_to_tensor(gradient), dtype), **scalars)

    def get_config(self) -> dict[str, Any]:
        config = super().get_config()
        config.pop("amsgrad", None)
        config["bias_correction"] = self.bias_correction
        return config


def _handle(variable: Any) -> tf.Tensor:
    """The resource handle of a Keras or TensorFlow variable (under tf.distribute: this replica's copy)."""
    if isinstance(variable, keras.Variable):
        variable = variable.value
    return variable.handle
