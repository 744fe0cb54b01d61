"""A patch of Keras 3.15, not kbert code: its TensorFlow trainer reduces the wrong values across replicas.

Keras 3.15's `TensorFlowTrainer` (`keras/src/backend/tensorflow/trainer.py`) fails in `Model.fit` /
`evaluate` under `MultiWorkerMirroredStrategy`, and with BERT's inputs under a several-replica
`MirroredStrategy`, because it reduces (1) the whole nested first batch and (2) every scalar log across
replicas. `patch_model_for_multi_worker` wraps one model's methods around the two upstream bugs; remove
this module (and its calls in the training code) once Keras fixes them:

1. keras-team/keras#20585, nested batches reduced as tensors. `fit` / `evaluate` first build the
   model symbolically from one batch. `TensorFlowTrainer._maybe_symbolic_build` gets that batch
   with `strategy.reduce("MEAN", batch, axis=None)`, and `CollectiveAllReduceStrategy` converts the
   whole nested `(x, y)` structure to one tensor, which fails with
       ValueError: Attempt to convert a value (PerReplica:{ 0: <tf.Tensor ...> }) with an
       unsupported type (<class '...values.PerReplica'>) to a Tensor.
   (A mean of integer token ids would be wrong anyway; only shapes and dtypes are needed.)
   A single-worker MirroredStrategy with several replicas takes the same path and does reduce each
   tensor, which fails on BERT's boolean padding mask:
       InvalidArgumentError: Value for attr 'T' of bool is not in the list of allowed values ...
       [Op:AddN]
   Fix: build from the first local replica's batch, which has the right shapes and dtypes, under
   any strategy with more than one replica.

2. keras-team/keras#20329 (also tensorflow/tensorflow#72388), scalar logs reduced on axis 0.
   `reduce_per_replica(..., reduction="mean")` runs `strategy.reduce("MEAN", v, axis=0)` on every
   value a train/test step returns when the strategy is in multi-worker mode; the loss and the
   metrics are scalars, so graph construction fails with
       ValueError: Invalid reduction dimension 0 for input with 0 dimensions. for
       '{{node Sum_3}} = Sum[T=DT_FLOAT, Tidx=DT_INT32, keep_dims=false](div_no_nan, ...)'
   Fix: in multi-worker mode the wrapped step returns each value with a leading axis of length 1,
   so Keras' reduction along axis 0 is the mean over the replicas and gives back the original
   shape: the same "mean over replicas" that Keras computes for a single-worker MirroredStrategy.

Fix 2 only changes anything when the strategy is a MultiWorkerMirroredStrategy in multi-worker mode,
fix 1 when the strategy has several replicas, so `patch_model_for_multi_worker` is safe to apply under
any strategy. `predict` is left alone (`Task.evaluate` in `kbert/tasks/base.py` scores through a plain traced call,
since `predict_on_batch` under several replicas returns one copy of the batch per replica).
"""

from __future__ import annotations

import types
from typing import Any

import keras
import tensorflow as tf

_PATCHED = "_kbert_multi_worker_patched"


def in_multi_worker_mode(strategy: tf.distribute.Strategy | None) -> bool:
    """Whether `strategy` is a MultiWorkerMirroredStrategy spanning more than one worker.

    This is the condition under which Keras 3.15 takes its broken multi-worker reduction path.

    Args:
        strategy: tf.distribute.Strategy or None.

    Returns:
        True in multi-worker mode.

    Example:
    >>> in_multi_worker_mode(tf.distribute.get_strategy())
    False
    """
    return isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy) and bool(
        strategy.extended._in_multi_worker_mode()
    )


def _with_replica_axis(logs: Any) -> Any:
    # Workaround for keras-team/keras#20329: give every returned value a leading axis of length 1
    # so that Keras' `strategy.reduce("MEAN", v, axis=0)` averages over replicas.
    return tf.nest.map_structure(lambda v: tf.expand_dims(tf.convert_to_tensor(v), 0), logs)


def _first_local_batch(strategy: tf.distribute.Strategy, batch: Any) -> Any:
    # Workaround for keras-team/keras#20585: no cross-worker reduce of the (nested) batch; one
    # local replica's batch carries the shapes and dtypes the symbolic build needs.
    return tf.nest.map_structure(
        lambda v: strategy.experimental_local_results(v)[0], batch, expand_composites=False
    )


def patch_model_for_multi_worker(model: keras.Model) -> keras.Model:
    """Patches one Keras model so that `fit` / `evaluate` work under MultiWorkerMirroredStrategy
    (and a several-replica MirroredStrategy with boolean inputs).

    Works with any Keras 3 model (Sequential, functional or subclassed, with or without its own
    `train_step`): it wraps the instance's `train_step`, `test_step` and `_maybe_symbolic_build`
    (see the module docstring for the two upstream bugs). It is idempotent and changes nothing
    under a single-replica strategy. Call it after building the model inside
    `strategy.scope()` and before the first `fit` / `evaluate`.

    Args:
        model: keras.Model. The model to patch, in place.

    Returns:
        The same model.

    Example:
    >>> model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    >>> patch_model_for_multi_worker(model) is model
    True
    """
    if not isinstance(model, keras.Model):
        raise TypeError(f"expected a keras.Model, got {type(model).__name__}")
    if getattr(model, _PATCHED, False):
        return model
    original_train_step = model.train_step
    original_test_step = model.test_step
    original_symbolic_build = model._maybe_symbolic_build

    def train_step(self: keras.Model, data: Any) -> Any:
        logs = original_train_step(data)
        return _with_replica_axis(logs) if in_multi_worker_mode(self.distribute_strategy) else logs

    def test_step(self: keras.Model, data: Any) -> Any:
        logs = original_test_step(data)
        return _with_replica_axis(logs) if in_multi_worker_mode(self.distribute_strategy) else logs

    def maybe_symbolic_build(self: keras.Model, iterator: Any = None, data_batch: Any = None) -> None:
        strategy = self.distribute_strategy
        several = in_multi_worker_mode(strategy) or strategy.num_replicas_in_sync > 1
        if iterator is None or self._distribute_strategy is None or not several:
            return original_symbolic_build(iterator=iterator, data_batch=data_batch)
        for _, _, data_iterator in iterator:
            batch = next(data_iterator, None)
            if batch is None:  # a bare StopIteration otherwise
                raise ValueError(
                    "This worker's share of the input is empty: the data has fewer batches than there "
                    "are workers or replicas (use more data or a smaller batch)"
                )
            data_batch = _first_local_batch(strategy, batch)
            break
        with strategy.scope():
            self._symbolic_build(data_batch=data_batch)

    model.train_step = types.MethodType(train_step, model)
    model.test_step = types.MethodType(test_step, model)
    model._maybe_symbolic_build = types.MethodType(maybe_symbolic_build, model)
    # Steps traced before the patch would keep the broken reduction.
    model.train_function = None
    model.test_function = None
    setattr(model, _PATCHED, True)
    return model
