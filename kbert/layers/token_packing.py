"""Real tokens only: a padded batch's tokens packed into one (tokens, width) matrix, and back.

A batch pads every row to its longest, and on real text half its positions can be padding (SST-2 dev in
batches of 32: 52% real). Everything in a transformer block but attention treats each position on its own
(the dense products, bias, activation, residual, LayerNorm), so it can run on the real tokens alone, gathered
row after row into one matrix; attention alone needs the (batch, seq) grid, and gets it by a scatter. The
encoder packs once at its entrance and unpacks once at its exit (as ModernBERT "unpads"; FlashAttention's
variable-length kernels do the same on GPUs), and `unpads` is the one place that decides when.
"""

from __future__ import annotations

import contextlib
import threading
from typing import Iterator

import tensorflow as tf
from tensorflow.python.ops import control_flow_util


_settings = threading.local()


@contextlib.contextmanager
def padded() -> Iterator[None]:
    """Within it, the encoder runs (and traces) every position, padding included, at inference too: the
    reference that the packed path is tested against, and the "before" of the speed benchmarks."""
    before = getattr(_settings, "padded", False)
    _settings.padded = True
    try:
        yield
    finally:
        _settings.padded = before


def unpads(training) -> bool:
    """Whether the encoder runs on real tokens only: at inference, outside XLA and outside `padded()`.

    XLA (a `jit_compile` step, a TPU) needs shapes fixed when it compiles, and the number of real tokens is
    known only from the data, so there the padded batch runs as it is; training runs padded too (its compiled
    pieces are per shape). TensorFlow's public API does not say whether a graph is being built for XLA; the
    control-flow helper that its own XLA and TPU code asks does.

    Example:
    >>> unpads(training=False), unpads(training=True)
    (True, False)
    >>> with padded():
    ...     unpads(training=False)
    False
    >>> bool(tf.function(lambda: tf.constant(unpads(training=False)), jit_compile=True)())
    False
    """
    if training or getattr(_settings, "padded", False):
        return False
    return not control_flow_util.GraphOrParentsInXlaContext(tf.compat.v1.get_default_graph())


def token_positions(padding_mask) -> tf.Tensor:
    """(tokens, 1) int64: where each real token sits in the flattened (batch * seq) grid, row after row."""
    return tf.where(tf.reshape(tf.not_equal(padding_mask, 0), [-1]))


def pack(x, positions) -> tf.Tensor:
    """(batch, seq, width) -> (tokens, width): the real tokens' rows, in `token_positions` order."""
    return tf.gather_nd(tf.reshape(x, [-1, x.shape[-1]]), positions)


def unpack(tokens, positions, padding_mask) -> tf.Tensor:
    """(tokens, width) -> (batch * seq, width), zeros at padded positions: `pack`'s inverse on real tokens.

    Example:
    >>> mask = tf.constant([[1, 1, 0], [1, 0, 0]])
    >>> positions = token_positions(mask)
    >>> x = tf.reshape(tf.range(6, dtype=tf.float32), [2, 3, 1])
    >>> tokens = pack(x, positions)
    >>> tokens[:, 0].numpy().tolist()
    [0.0, 1.0, 3.0]
    >>> unpack(tokens, positions, mask)[:, 0].numpy().tolist()
    [0.0, 1.0, 0.0, 3.0, 0.0, 0.0]
    """
    shape = tf.shape(padding_mask, out_type=tf.int64)
    return tf.scatter_nd(positions, tokens, tf.stack([shape[0] * shape[1], tf.shape(tokens, out_type=tf.int64)[1]]))
