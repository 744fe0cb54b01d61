"""Optimizers for BERT training: AdamW or LAMB, BERT's schedule, clipping, accumulation, mixed precision.

Everything here is a thin layer over Keras 3 optimizers: `keras.optimizers.AdamW` and
`keras.optimizers.Lamb` already implement decoupled weight decay, gradient clipping and gradient
accumulation (`gradient_accumulation_steps`); `keras.optimizers.LossScaleOptimizer` implements dynamic
loss scaling for float16.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import keras
import tensorflow as tf

from kbert.training.schedules import LinearWarmupLinearDecay

# Variables that get no weight decay: biases and LayerNormalization's gamma/beta, as in BERT's
# `exclude_from_weight_decay=["LayerNorm", "layer_norm", "bias"]`.
#
# How Keras 3.15 matches: `exclude_from_weight_decay(var_names=...)` joins the strings into one
# regular expression and `re.search`es it in `variable.name` at update time. On the TensorFlow
# backend that is the *tf.Variable* name, i.e. the full path with a ":0" suffix ("encoder/ln/gamma:0",
# and "encoder/ln/gamma/replica_1:0" for the copies a MirroredStrategy makes), not the Keras short
# name. A bare "LayerNorm" or "layer_norm" would therefore also exclude the kernels of any layer whose
# *name* contains it, so the pattern is anchored on the last path component instead. It matches the
# Keras short names ("bias", "gamma", "beta") on the other backends too.
WEIGHT_DECAY_EXCLUDE: tuple[str, ...] = (r"(?:^|/)(?:bias|gamma|beta)(?:/replica_\d+)?(?::\d+)?$",)

MixedPrecision = Literal["none", "mixed_float16", "mixed_bfloat16"]
_POLICIES = {"none": "float32", "float32": "float32", "mixed_float16": "mixed_float16",
             "mixed_bfloat16": "mixed_bfloat16"}


def create_optimizer(
    learning_rate: float,
    num_train_steps: int,
    warmup_steps: int,
    weight_decay: float = 0.01,
    optimizer: Literal["adamw", "lamb"] = "adamw",
    clipnorm: float | None = 1.0,
    gradient_accumulation_steps: int = 1,
    beta_1: float = 0.9,
    beta_2: float = 0.999,
    epsilon: float = 1e-6,
    exclude_from_weight_decay: Sequence[str] = WEIGHT_DECAY_EXCLUDE,
) -> keras.optimizers.Optimizer:
    """Builds BERT's optimizer: AdamW (or LAMB) on a linear warmup / linear decay schedule.

    Args:
        learning_rate: float. Peak learning rate (after warmup).
        num_train_steps: int. Total optimizer updates; the rate decays linearly to 0 there.
        warmup_steps: int. Linear warmup updates (e.g. `int(0.1 * num_train_steps)`).
        weight_decay: float. Decoupled weight decay rate (0 disables it). Biases and
            LayerNormalization gamma/beta are excluded (see `exclude_from_weight_decay`).
        optimizer: str. `"adamw"` (BERT) or `"lamb"` (You et al. 2019, large-batch pretraining).
        clipnorm: float or None. Clip the gradients by their *global* norm, as BERT's
            `tf.clip_by_global_norm(grads, 1.0)` (Keras `global_clipnorm`). None disables it.
            Under tf.distribute Keras clips each replica's gradient before the all-reduce.
        gradient_accumulation_steps: int. Average the gradients of this many batches before one
            update (Keras' own accumulation); the schedule counts updates, not batches.
        beta_1: float. Adam/LAMB first-moment decay.
        beta_2: float. Adam/LAMB second-moment decay.
        epsilon: float. Adam/LAMB epsilon (BERT uses 1e-6).
        exclude_from_weight_decay: sequence of str. Regular expressions searched in each
            variable's name; a match turns weight decay off for it.

    Returns:
        A Keras 3 optimizer, wrapped in `keras.optimizers.LossScaleOptimizer` when the global
        dtype policy is `mixed_float16` (call `set_mixed_precision` first). Its
        `learning_rate` follows `LinearWarmupLinearDecay`.

    Example:
    >>> opt = create_optimizer(1e-4, num_train_steps=1000, warmup_steps=100)
    >>> type(opt).__name__
    'AdamW'
    """
    if gradient_accumulation_steps < 1:
        raise ValueError(
            f"gradient_accumulation_steps must be >= 1, got {gradient_accumulation_steps}"
        )
    if gradient_accumulation_steps > 1:
        _check_accumulation_supported()
    if weight_decay < 0:
        raise ValueError(f"weight_decay must be >= 0, got {weight_decay}")
    if clipnorm is not None and clipnorm <= 0:
        raise ValueError(f"clipnorm must be > 0 or None, got {clipnorm}")
    schedule = LinearWarmupLinearDecay(
        learning_rate,
        num_train_steps=num_train_steps,
        warmup_steps=warmup_steps,
        gradient_accumulation_steps=gradient_accumulation_steps,
    )
    kwargs = dict(
        learning_rate=schedule,
        beta_1=beta_1,
        beta_2=beta_2,
        epsilon=epsilon,
        weight_decay=weight_decay or None,
        global_clipnorm=clipnorm,
        gradient_accumulation_steps=(
            gradient_accumulation_steps if gradient_accumulation_steps > 1 else None
        ),
    )
    name = optimizer.lower()
    if name == "adamw":
        # AdamW rejects weight_decay=None; 0.0 is a no-op decay.
        opt = keras.optimizers.AdamW(**{**kwargs, "weight_decay": float(weight_decay)})
    elif name == "lamb":
        opt = keras.optimizers.Lamb(**kwargs)
    else:
        raise ValueError(f"optimizer must be 'adamw' or 'lamb', got {optimizer!r}")
    if weight_decay and exclude_from_weight_decay:
        opt.exclude_from_weight_decay(var_names=list(exclude_from_weight_decay))
    if keras.config.dtype_policy().name == "mixed_float16":
        opt = keras.optimizers.LossScaleOptimizer(opt)
    return opt


def _check_accumulation_supported() -> None:
    # Keras 3.15 accumulates inside `ops.cond`, and its TF optimizer updates variables through
    # `merge_call`; tf.distribute refuses a merge_call inside control flow ("`merge_call` called
    # while defining a new graph or a tf.function") except under XLA with every device a GPU, where
    # Mirrored / MultiWorkerMirrored strategies skip merge_call. Fail early instead.
    if not tf.distribute.has_strategy():
        return
    strategy = tf.distribute.get_strategy()
    if isinstance(strategy, tf.distribute.OneDeviceStrategy):
        return
    devices = strategy.extended.worker_devices
    if not all("GPU" in device.upper() for device in devices):
        raise ValueError(
            "gradient_accumulation_steps > 1 is not supported by Keras 3.15 under "
            f"{type(strategy).__name__} on {', '.join(devices)}: its accumulation puts a "
            "cross-replica merge_call inside a conditional. It works with the default or "
            "one_device strategy, and on GPU-only Mirrored/MultiWorkerMirrored strategies with "
            "`model.compile(jit_compile=True)`; otherwise use a bigger per-replica batch or more "
            "replicas."
        )


def set_mixed_precision(policy: MixedPrecision | str = "none") -> str:
    """Sets Keras' global dtype policy for models built afterwards.

    `mixed_bfloat16` needs no loss scaling. `mixed_float16` does: `create_optimizer` (and Keras
    `compile`) wrap the optimizer in a `LossScaleOptimizer` when this policy is active. Call it before
    building the model and the optimizer; `set_mixed_precision("none")` restores float32.

    Args:
        policy: str. `"none"` (float32), `"mixed_float16"` or `"mixed_bfloat16"`.

    Returns:
        The name of the Keras dtype policy now in force.

    Example:
    >>> set_mixed_precision("mixed_bfloat16")
    'mixed_bfloat16'
    >>> set_mixed_precision("none")
    'float32'
    """
    if policy not in _POLICIES:
        raise ValueError(
            f"mixed precision must be one of 'none', 'mixed_float16', 'mixed_bfloat16'; got {policy!r}"
        )
    keras.config.set_dtype_policy(_POLICIES[policy])
    return keras.config.dtype_policy().name
