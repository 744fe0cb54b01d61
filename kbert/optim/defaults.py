"""BERT's optimizer defaults, defined once: every `compile()` and `create_optimizer` caller uses them.

AdamW with PyTorch's update rule (or Google's original one, or LAMB), weight decay 0.01 except on
biases and LayerNormalization gamma/beta, epsilon 1e-6, gradients clipped at global norm 1.0, BERT's
linear warmup / linear decay schedule, gradient accumulation, and loss scaling under Keras'
mixed float16 policy.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import keras

from kbert.optim.adamw import AdamW
from kbert.optim.lamb import Lamb
from kbert.optim.schedules import LinearWarmupLinearDecay
from kbert.precision import MIXED_FLOAT16

# Variables that get no weight decay: biases and LayerNormalization's gamma/beta, as in BERT's
# `exclude_from_weight_decay=["LayerNorm", "layer_norm", "bias"]` and Hugging Face's Trainer (biases and
# LayerNorm weights).
#
# How Keras 3.15 matches: `exclude_from_weight_decay(var_names=...)` joins the strings into one
# regular expression and `re.search`es it in `variable.name` at update time. On the TensorFlow
# backend that is the *tf.Variable* name, i.e. the full path with a ":0" suffix ("encoder/ln/gamma:0",
# and "encoder/ln/gamma/replica_1:0" for the copies a MirroredStrategy makes), not the Keras short
# name. A bare "LayerNorm" or "layer_norm" would therefore also exclude the kernels of any layer whose
# *name* contains it, so the pattern is anchored on the last path component instead. It matches the
# Keras short names ("bias", "gamma", "beta") on the other backends too.
WEIGHT_DECAY_EXCLUDE: tuple[str, ...] = (r"(?:^|/)(?:bias|gamma|beta)(?:/replica_\d+)?(?::\d+)?$",)

OptimizerName = Literal["adamw", "adamw_google", "lamb"]
OPTIMIZERS: tuple[str, ...] = ("adamw", "adamw_google", "lamb")


def create_optimizer(
    learning_rate: float,
    num_train_steps: int | None = None,
    warmup_steps: int = 0,
    weight_decay: float = 0.01,
    optimizer: OptimizerName | str = "adamw",
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
        num_train_steps: int or None. Total optimizer updates; the rate decays linearly to 0 there.
            None keeps the rate constant (what `compile()` uses when it knows no step count).
        warmup_steps: int. Linear warmup updates (e.g. `int(0.1 * num_train_steps)`).
        weight_decay: float. Decoupled weight decay rate (0 disables it). Biases and
            LayerNormalization gamma/beta are excluded (see `exclude_from_weight_decay`).
        optimizer: str. `"adamw"`: PyTorch / Hugging Face AdamW (`m_hat / (sqrt(v_hat) + eps)`, see
            `kbert.optim.AdamW`); `"adamw_google"`: Google's original BERT `AdamWeightDecayOptimizer`
            (no bias correction); `"lamb"`: LAMB (You et al. 2019, large-batch pretraining).
        clipnorm: float or None. Clip the gradients by their *global* norm, as BERT's
            `tf.clip_by_global_norm(grads, 1.0)` (Keras `global_clipnorm`). None disables it.
            Under tf.distribute Keras clips each replica's gradient before the all-reduce.
        gradient_accumulation_steps: int. Average the gradients of this many batches before one
            update; works under Mirrored and MultiWorkerMirrored strategies too. `iterations` and the
            schedule count updates.
        beta_1: float. Adam/LAMB first-moment decay.
        beta_2: float. Adam/LAMB second-moment decay.
        epsilon: float. Adam/LAMB epsilon (BERT uses 1e-6).
        exclude_from_weight_decay: sequence of str. Regular expressions searched in each
            variable's name; a match turns weight decay off for it.

    Returns:
        A Keras 3 optimizer, wrapped in `keras.optimizers.LossScaleOptimizer` when the global
        dtype policy is Keras' mixed float16 (`kbert.precision.MIXED_FLOAT16`). Its `learning_rate`
        follows `LinearWarmupLinearDecay`.

    Example:
    >>> opt = create_optimizer(1e-4, num_train_steps=1000, warmup_steps=100)
    >>> type(opt).__name__, opt.bias_correction
    ('AdamW', True)
    """
    if gradient_accumulation_steps < 1:
        raise ValueError(f"gradient_accumulation_steps must be >= 1, got {gradient_accumulation_steps}")
    if weight_decay < 0:
        raise ValueError(f"weight_decay must be >= 0, got {weight_decay}")
    if clipnorm is not None and clipnorm <= 0:
        raise ValueError(f"clipnorm must be > 0 or None, got {clipnorm}")
    name = optimizer.lower()
    if name not in OPTIMIZERS:
        raise ValueError(f"optimizer must be one of {', '.join(OPTIMIZERS)}; got {optimizer!r}")
    schedule = (
        float(learning_rate) if num_train_steps is None
        else LinearWarmupLinearDecay(learning_rate, num_train_steps=num_train_steps, warmup_steps=warmup_steps)
    )
    kwargs = dict(learning_rate=schedule, beta_1=beta_1, beta_2=beta_2, epsilon=epsilon,
                  global_clipnorm=clipnorm, gradient_accumulation_steps=gradient_accumulation_steps)
    if name == "lamb":
        opt = Lamb(weight_decay=weight_decay or None, **kwargs)
    else:
        opt = AdamW(weight_decay=float(weight_decay), bias_correction=name == "adamw", **kwargs)
    if weight_decay and exclude_from_weight_decay:
        opt.exclude_from_weight_decay(var_names=list(exclude_from_weight_decay))
    if keras.config.dtype_policy().name == MIXED_FLOAT16:
        opt = keras.optimizers.LossScaleOptimizer(opt)
    return opt


def build_optimizer_slots(model: keras.Model) -> None:
    """Creates the compiled optimizer's variables (Adam moments, ...) for the model's trainable weights now.

    Keras otherwise creates them inside the first traced train step, and a tf.function that creates
    variables while tracing is traced a second time: about 6 s more before the first step of
    all-MiniLM-L6-v2 on this project's 2-core machine. Does nothing for an unbuilt model or optimizer
    that is already built.
    """
    optimizer = getattr(model, "optimizer", None)
    if optimizer is not None and not optimizer.built and model.built:
        optimizer.build(model.trainable_variables)
