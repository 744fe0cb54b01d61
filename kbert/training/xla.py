"""A train step compiled whole by XLA: ask Keras for it, check that it got it, and name what XLA refused.

A TPU runs the whole train step as one XLA program with fixed shapes; `--jit-compile` builds the same step
on a CPU or GPU. Keras 3.15 resolves `jit_compile="auto"` to False under any distribution strategy, so it
is asked for explicitly (`compile_model`). Two ways a requested XLA step could quietly not be one are
closed here:

- Keras' `jit_compile` setter falls back to False, with only a warning, when a layer says
  `supports_jit = False` or TensorFlow's op determinism is on: `compile_model` raises instead.
- TensorFlow compiles a `tf.function(jit_compile=True)` on its first call and raises
  `InvalidArgumentError: Detected unsupported operations when trying to compile graph ...` for any op
  without an XLA kernel (it never falls back): `explain_xla_errors` turns that into a ValueError that names
  the ops and nodes.

`fixed_steps_per_epoch` counts the steps of a fixed-shape epoch: whole batches (the remainder is dropped)
in whole executions of `steps_per_execution` steps; the training dataset repeats, since an end of data
cannot be caught inside a TPU loop.
"""

from __future__ import annotations

import contextlib
import re
from typing import Any, Iterator

import keras
import tensorflow as tf

_UNSUPPORTED = "Detected unsupported operations when trying to compile graph"


def compiles_whole_step(jit_compile: bool, strategy: str) -> bool:
    """Whether training takes the fixed-shape XLA path: asked for, or under a TPU (one XLA program a step).

    Example:
    >>> compiles_whole_step(False, "tpu"), compiles_whole_step(True, "auto"), compiles_whole_step(False, "auto")
    (True, True, False)
    """
    return bool(jit_compile) or strategy == "tpu"


def compile_model(model: keras.Model, *, jit_compile: bool, steps_per_execution: int = 1, **compile_args: Any) -> None:
    """`model.compile(...)` with `jit_compile` honoured or refused, never silently dropped.

    Args:
        model: keras.Model. The model to compile.
        jit_compile: bool. Compile the train step (and `fit`'s evaluation step) whole with XLA.
        steps_per_execution: int. Train steps run per call of the compiled loop (>= 1).
        **compile_args: the rest of `model.compile`'s arguments (optimizer, loss, ...).

    Raises:
        ValueError: `steps_per_execution` < 1, or `jit_compile` was asked for and Keras turned it off
            (naming the layers that do not support XLA, or op determinism).

    Example:
    >>> model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    >>> compile_model(model, jit_compile=True, optimizer="sgd", loss="mse")
    >>> model.jit_compile
    True
    """
    if steps_per_execution < 1:
        raise ValueError(f"steps_per_execution must be >= 1, got {steps_per_execution}")
    model.compile(jit_compile=bool(jit_compile), steps_per_execution=int(steps_per_execution), **compile_args)
    if jit_compile and model.jit_compile is not True:
        refusing = sorted({layer.name for layer in model._flatten_layers() if not layer.supports_jit})
        if refusing:
            reason = f"layer(s) {', '.join(refusing)} do not support XLA (supports_jit = False)"
        elif tf.config.experimental.is_op_determinism_enabled():
            reason = "TensorFlow's op determinism is enabled, and Keras turns XLA off under it"
        else:
            reason = "Keras turned it off for this model and platform"
        raise ValueError(f"jit_compile: the train step cannot be compiled with XLA: {reason}. Train without "
                         "--jit-compile (not possible with --strategy tpu).")


def unsupported_ops(message: str) -> tuple[list[str], list[str]]:
    """The op types and node names that an XLA "unsupported operations" error lists.

    Example:
    >>> unsupported_ops("... on XLA_CPU_JIT: AsString (No registered 'AsString' OpKernel for XLA_CPU_JIT "
    ...                 "devices compatible with node {{node model/bad/AsString}}){{node model/bad/AsString}}")
    (['AsString'], ['model/bad/AsString'])
    """
    ops = list(dict.fromkeys(re.findall(r"(\w+) \(No registered '", message)))
    nodes = list(dict.fromkeys(re.findall(r"\{\{node ([^}]+)\}\}", message)))
    return ops, nodes


@contextlib.contextmanager
def explain_xla_errors(active: bool = True) -> Iterator[None]:
    """Re-raises TensorFlow's "unsupported operations" XLA error as a ValueError naming the ops.

    Args:
        active: bool. False passes every error through unchanged (no XLA step).

    Raises:
        ValueError: the compiled step holds an op XLA cannot compile (the TensorFlow error is its cause).

    Example:
    >>> with explain_xla_errors():  # doctest: +ELLIPSIS
    ...     tf.function(lambda x: tf.strings.as_string(x), jit_compile=True)(tf.constant(1))
    Traceback (most recent call last):
    ...
    ValueError: jit_compile: XLA cannot compile the train step: op(s) AsString ...
    """
    try:
        yield
    except tf.errors.OpError as error:
        if not active or _UNSUPPORTED not in str(error.message):
            raise
        ops, nodes = unsupported_ops(error.message)
        raise ValueError(
            f"jit_compile: XLA cannot compile the train step: op(s) {', '.join(ops) or '?'} have no XLA kernel "
            f"(node(s) {', '.join(nodes[:5]) or '?'}). Keep strings and host-only ops out of the model and its "
            "loss (tokenize in tf.data), or train without --jit-compile (not possible with --strategy tpu)."
        ) from error


def fixed_steps_per_epoch(examples: int, batch_size: int, steps_per_execution: int = 1) -> int:
    """Steps of one fixed-shape epoch: `examples // batch_size`, down to a multiple of `steps_per_execution`.

    Args:
        examples: int. Rows of the training data (`TaskData.size`: examples, or the windows a task cuts them into).
        batch_size: int. The global batch.
        steps_per_execution: int. Steps per compiled loop; an epoch runs whole loops.

    Raises:
        ValueError: not one whole execution of whole batches fits in the data.

    Example:
    >>> fixed_steps_per_epoch(100, 8), fixed_steps_per_epoch(100, 8, steps_per_execution=5)
    (12, 10)
    """
    if batch_size < 1 or steps_per_execution < 1:
        raise ValueError(f"batch_size and steps_per_execution must be >= 1, got {batch_size}, {steps_per_execution}")
    steps = examples // batch_size // steps_per_execution * steps_per_execution
    if steps < 1:
        raise ValueError(f"{examples} training rows make no fixed-shape epoch: batches of {batch_size} drop the "
                         f"remainder and an epoch runs whole executions of {steps_per_execution} step(s); lower "
                         "--batch-size or --steps-per-execution")
    return steps


def check_fixed_shapes(element_spec: Any) -> None:
    """Raises ValueError unless every tensor of a dataset's `element_spec` has a static shape and is no
    string or int64 (a compiled step gets one shape, int32 ids, and no strings).

    Example:
    >>> check_fixed_shapes({"token_ids": tf.TensorSpec([8, 128], tf.int32)})
    >>> check_fixed_shapes({"token_ids": tf.TensorSpec([None, 128], tf.int32)})
    Traceback (most recent call last):
    ...
    ValueError: a compiled train step needs fixed shapes, int32 ids and no strings: token_ids is (None, 128) int32
    """
    for path, spec in _named(element_spec):
        if (not isinstance(spec, tf.TensorSpec) or not spec.shape.is_fully_defined()
                or spec.dtype in (tf.string, tf.int64)):
            shape = tuple(spec.shape) if hasattr(spec, "shape") else "?"
            raise ValueError(f"a compiled train step needs fixed shapes, int32 ids and no strings: "
                             f"{path or 'the batch'} is {shape} "
                             f"{getattr(spec.dtype, 'name', type(spec).__name__)}")


def _named(structure: Any, prefix: str = "") -> Iterator[tuple[str, Any]]:
    """(path, leaf) pairs of a nest of dicts, tuples and lists: "0/token_ids", "1"."""
    if isinstance(structure, dict):
        items = sorted(structure.items())
    elif isinstance(structure, (tuple, list)):
        items = list(enumerate(structure))
    else:
        yield prefix, structure
        return
    for key, value in items:
        yield from _named(value, f"{prefix}/{key}" if prefix else str(key))
