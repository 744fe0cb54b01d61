"""Mixed precision for training; BERT's optimizer itself lives in `kbert.optim` (re-exported here).

`create_optimizer` and `WEIGHT_DECAY_EXCLUDE` are defined in `kbert.optim.defaults`, below the models,
so that every model's `compile()` default and the training entry points use the same function.
"""

from __future__ import annotations

from typing import Literal

import keras

from kbert.optim.defaults import WEIGHT_DECAY_EXCLUDE, create_optimizer

__all__ = ["WEIGHT_DECAY_EXCLUDE", "create_optimizer", "set_mixed_precision"]

MixedPrecision = Literal["none", "mixed_float16", "mixed_bfloat16"]
_POLICIES = {"none": "float32", "float32": "float32", "mixed_float16": "mixed_float16",
             "mixed_bfloat16": "mixed_bfloat16"}


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
