"""`set_mixed_precision`: the Keras dtype policy that `--mixed-precision` names, for models built next.

Which policy `auto` means on this machine is decided TensorFlow-free in `kbert.precision`; this module
applies it. BERT's optimizer and schedule live in `kbert.optim`.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from typing import Literal

import keras

from kbert.precision import MIXED_PRECISIONS, resolve_mixed_precision

MixedPrecision = Literal["none", "mixed_float16", "mixed_bfloat16", "auto"]
_POLICIES = {"none": "float32", "float32": "float32", "mixed_float16": "mixed_float16",
             "mixed_bfloat16": "mixed_bfloat16"}


def set_mixed_precision(policy: MixedPrecision | str = "none") -> str:
    """Sets Keras' global dtype policy for models built afterwards.

    `mixed_bfloat16` needs no loss scaling. `mixed_float16` does: `create_optimizer` (and Keras
    `compile`) wrap the optimizer in a `LossScaleOptimizer` when this policy is active. Call it before
    building the model and the optimizer; `set_mixed_precision("none")` restores float32.

    `"auto"` picks `"mixed_float16"` when TensorFlow sees a GPU, `"mixed_bfloat16"` on a CPU with AMX or
    AVX512-BF16, and float32 elsewhere (`kbert.precision.resolve_mixed_precision`), and says which on stderr.

    Args:
        policy: str. `"none"` (float32), `"mixed_float16"`, `"mixed_bfloat16"` or `"auto"`.

    Returns:
        The name of the Keras dtype policy now in force.

    Example:
    >>> set_mixed_precision("mixed_bfloat16")
    'mixed_bfloat16'
    >>> set_mixed_precision("none")
    'float32'
    """
    if policy == "auto":
        import tensorflow as tf

        gpu = bool(tf.config.list_physical_devices("GPU"))
        policy = resolve_mixed_precision("auto", gpu=gpu)
        print(f"mixed precision auto: {policy} ({'GPU' if gpu else 'CPU'})", file=sys.stderr)
    if policy not in _POLICIES:
        raise ValueError(f"mixed precision must be one of {', '.join(MIXED_PRECISIONS)}; got {policy!r}")
    keras.config.set_dtype_policy(_POLICIES[policy])
    return keras.config.dtype_policy().name


@contextlib.contextmanager
def mixed_precision_scope(policy: MixedPrecision | str = "none") -> Iterator[str]:
    """`set_mixed_precision(policy)` for the `with` block only: the previous global policy comes back after,
    as `kbert finetune` and `kbert pretrain` need when they run in a caller's process.

    Yields:
        The name of the Keras dtype policy in force inside the block.

    Example:
    >>> with mixed_precision_scope("mixed_bfloat16") as name:
    ...     name
    'mixed_bfloat16'
    >>> keras.config.dtype_policy().name
    'float32'
    """
    previous = keras.config.dtype_policy().name
    try:
        yield set_mixed_precision(policy)
    finally:
        keras.config.set_dtype_policy(previous)
