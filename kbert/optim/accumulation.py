"""Gradient accumulation that also works under tf.distribute, for any Keras 3 optimizer class."""

from __future__ import annotations

from typing import Any

import keras
import tensorflow as tf
from keras import ops


class GradientAccumulation:
    """Mixin for a Keras optimizer class: average the gradients of `k` batches, then update once.

    Keras 3.15's own `gradient_accumulation_steps` puts the update in an `ops.cond` inside the replica
    function; the update's cross-replica `merge_call` is not allowed there, so Mirrored and
    MultiWorkerMirrored strategies fail. Here each replica adds its gradients to its own
    accumulators (sync-on-read variables, no communication), and the conditional update runs in the
    cross-replica context, calling the optimizer's usual `apply` on every replica: the same pattern as
    `keras.optimizers.LossScaleOptimizer`, which skips non-finite steps under tf.distribute.

    The optimizer's `iterations` counts updates only, so a learning-rate schedule, the bias
    correction of Adam and step checkpoints all see updates. Accumulators are transient: they are not
    among the optimizer's `variables` (checkpoints are written at update boundaries, where they are zero).

    Args:
        gradient_accumulation_steps: int or None. Batches per update; None or 1 updates every batch.

    Example:
    >>> class AccumulatingSGD(GradientAccumulation, keras.optimizers.SGD):
    ...     pass
    >>> AccumulatingSGD(learning_rate=0.1, gradient_accumulation_steps=4).accumulation_steps
    4
    """

    def __init__(self, *args: Any, gradient_accumulation_steps: int | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        steps = int(gradient_accumulation_steps or 1)
        if steps < 1:
            raise ValueError(f"gradient_accumulation_steps must be >= 1, got {gradient_accumulation_steps}")
        self.accumulation_steps = steps
        self._accumulators: list[keras.Variable | None] = []
        self._micro_steps: keras.Variable | None = None

    def build(self, variables: list) -> None:
        super().build(variables)
        if self.accumulation_steps == 1:
            return
        with keras.name_scope(self.name):
            # Each replica keeps its own sum (synchronization="on_read"): no all-reduce per batch.
            self._accumulators = [
                keras.Variable(ops.zeros(v.shape, "float32"), trainable=False, name="gradient_accumulator",
                               synchronization="on_read", aggregation="sum")
                for v in variables
            ]
            self._micro_steps = keras.Variable(0, dtype="int64", trainable=False, name="accumulated_batches",
                                               aggregation="only_first_replica")

    def apply(self, grads: list, trainable_variables: list | None = None) -> None:
        # An embedding's gradient comes as the rows a batch touched (tf.IndexedSlices); it is written out
        # densely, as PyTorch gives it: Adam decays every row's moments each step (kbert's AdamW cannot
        # take the rows at all), and Keras' Lamb updates the rows differently from the dense gradient.
        grads = [tf.convert_to_tensor(g) if isinstance(g, tf.IndexedSlices) else g for g in grads]
        if self.accumulation_steps == 1:
            return super().apply(grads, trainable_variables)
        if trainable_variables is None:
            trainable_variables = self._trainable_variables
        trainable_variables = list(trainable_variables)
        if not self.built:
            self.build(trainable_variables)
        is_update = ops.equal((self._micro_steps + 1) % self.accumulation_steps, 0)
        averaged = []
        for grad, variable in zip(grads, trainable_variables):
            if grad is None:
                averaged.append(None)
                continue
            accumulator = self._accumulators[self._get_variable_index(variable)]
            total = accumulator.value + ops.cast(tf.convert_to_tensor(grad), "float32")
            averaged.append(total / self.accumulation_steps)
            accumulator.assign(ops.where(is_update, ops.zeros_like(total), total))
        update = super().apply

        def apply_averaged(grads, variables):
            update([None if g is None else ops.cast(g, v.dtype) for g, v in zip(grads, variables)], variables)

        context = tf.distribute.get_replica_context()
        if context is None or tf.__internal__.distribute.strategy_supports_no_merge_call():
            ops.cond(is_update, lambda: apply_averaged(averaged, trainable_variables), lambda: None)
        else:
            def cross_replica(strategy, is_update, grads, variables):
                # A cond whose branch synchronises replicas must run in the cross-replica context.
                first = strategy.experimental_local_results(is_update)[0]
                ops.cond(first, lambda: strategy.extended.call_for_each_replica(
                    apply_averaged, args=(grads, variables)), lambda: None)

            context.merge_call(cross_replica, args=(is_update, averaged, trainable_variables))
        self._micro_steps.assign_add(1)

    def get_config(self) -> dict[str, Any]:
        config = super().get_config()
        config["gradient_accumulation_steps"] = self.accumulation_steps if self.accumulation_steps > 1 else None
        return config
