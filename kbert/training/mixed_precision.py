"""`set_mixed_precision`: the Keras dtype policy that `--mixed-precision` names, for models built next.

The names, the policy each stands for and what `auto` means on this machine live TensorFlow-free in
`kbert.precision`; this module applies them. BERT's optimizer and schedule live in `kbert.optim`.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator

import keras

from kbert.precision import MIXED_BFLOAT16, MixedPrecision, keras_policy, resolve_mixed_precision


def set_mixed_precision(policy: MixedPrecision | str = "none") -> str:
    """Sets Keras' global dtype policy for models built afterwards.

    A bfloat16 policy needs no loss scaling. A float16 one does: `create_optimizer` (and Keras `compile`)
    wrap the optimizer in a `LossScaleOptimizer` when it is active. Call it before building the model and
    the optimizer; `set_mixed_precision("none")` restores float32.

    `"auto"` picks float16 when TensorFlow sees a GPU, bfloat16 on a CPU with AMX or AVX512-BF16, and
    float32 elsewhere (`kbert.precision.resolve_mixed_precision`), and says which on stderr.

    Args:
        policy: str. One of `kbert.precision.MIXED_PRECISIONS` (`"none"` is float32; `"float32"` is
            accepted for it too).

    Returns:
        The name of the Keras dtype policy now in force.

    Raises:
        ValueError: an unknown policy, naming the choices.

    Example:
    >>> set_mixed_precision(MIXED_BFLOAT16) == MIXED_BFLOAT16
    True
    >>> keras.layers.Dense(2).compute_dtype
    'bfloat16'
    >>> set_mixed_precision("none")
    'float32'
    """
    gpu = policy == "auto" and _sees_gpu()
    name = resolve_mixed_precision(policy, gpu=gpu)  # checks the name; "auto" becomes this machine's choice
    if policy == "auto":
        print(f"mixed precision auto: {name} ({'GPU' if gpu else 'CPU'})", file=sys.stderr)
    keras.config.set_dtype_policy(keras_policy(name))
    return keras.config.dtype_policy().name


def _sees_gpu() -> bool:
    """Whether TensorFlow sees a GPU."""
    import tensorflow as tf

    return bool(tf.config.list_physical_devices("GPU"))


@contextlib.contextmanager
def mixed_precision_scope(policy: MixedPrecision | str = "none") -> Iterator[str]:
    """`set_mixed_precision(policy)` for the `with` block only: the previous global policy comes back after,
    as `kbert finetune` and `kbert pretrain` need when they run in a caller's process.

    Args:
        policy: str. As in `set_mixed_precision`.

    Yields:
        The name of the Keras dtype policy in force inside the block.

    Example:
    >>> with mixed_precision_scope(MIXED_BFLOAT16):
    ...     keras.layers.Dense(2).compute_dtype
    'bfloat16'
    >>> keras.config.dtype_policy().name
    'float32'
    """
    previous = keras.config.dtype_policy().name
    try:
        yield set_mixed_precision(policy)
    finally:
        keras.config.set_dtype_policy(previous)
