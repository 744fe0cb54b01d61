"""The element-wise pieces around a bf16 transformer block's products, each timed alone in several forms.

MiniLM's shapes (hidden 384, 12 heads, intermediate 1536) at batch 32 x 128, in bfloat16:
- the feed-forward's first matmul with bias and GELU: fused by oneDNN in bf16, as a float32 piece in plain
  ops, and as the same piece compiled by XLA;
- the second matmul with bias, residual and LayerNorm in those forms, plus tf-keras' batch-norm layout;
- the masked softmax in float32 (plain, XLA) and in bf16.
Each line gives the best of 5 x 10 calls and the largest error against the same piece in float32.
docs/investigations/bf16-inference.md holds a recorded run.

    python -m benchmarks.studies.bf16_pieces
"""

from __future__ import annotations

import time

import numpy as np
import tensorflow as tf

ROWS, HIDDEN, INTERMEDIATE, HEADS, SEQ = 32 * 128, 384, 1536, 12, 128


def best_ms(fn) -> float:
    for _ in range(3):
        fn()
    best = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(10):
            fn()
        np.asarray(fn())  # the last call's result, so queued work has finished
        best = min(best, (time.perf_counter() - start) / 11)
    return 1000 * best


def report(title: str, variants: dict, reference: tf.Tensor, floor=None) -> None:
    print(f"\n{title}")
    if floor is not None:
        print(f"  {'the matmul alone':44s} {best_ms(floor):7.2f} ms")
    for name, fn in variants.items():
        error = float(tf.reduce_max(tf.abs(tf.cast(fn(), tf.float32) - reference)))
        print(f"  {name:44s} {best_ms(fn):7.2f} ms   max error {error:.1e}")


def layer_norm(z, gamma, beta):
    mean, variance = tf.nn.moments(z, axes=[-1], keepdims=True)
    return (z - mean) * tf.math.rsqrt(variance + 1e-12) * gamma + beta


def main() -> None:
    rng = np.random.default_rng(0)

    def normal(*shape, scale=1.0):
        return tf.constant(rng.normal(size=shape).astype("float32") * scale)

    x, w1, b1 = normal(ROWS, HIDDEN), normal(HIDDEN, INTERMEDIATE, scale=0.05), normal(INTERMEDIATE, scale=0.1)
    h, w2, b2 = normal(ROWS, INTERMEDIATE), normal(INTERMEDIATE, HIDDEN, scale=0.03), normal(HIDDEN, scale=0.1)
    residual, beta = normal(ROWS, HIDDEN), normal(HIDDEN, scale=0.1)
    gamma = tf.constant(rng.uniform(0.5, 1.5, HIDDEN).astype("float32"))
    low = {name: tf.cast(t, tf.bfloat16) for name, t in dict(x=x, w1=w1, b1=b1, h=h, w2=w2, b2=b2,
                                                           residual=residual).items()}

    def gelu_piece(y, bias):  # the float32 piece: bias and GELU in float32, rounded back
        return tf.cast(tf.nn.gelu(tf.cast(y, tf.float32) + bias, approximate=False), y.dtype)

    gelu_xla = tf.function(gelu_piece, jit_compile=True)
    report("matmul 384 -> 1536, bias, GELU", {
        "fused by oneDNN (bf16 bias_add + gelu)": tf.function(
            lambda: tf.nn.gelu(tf.nn.bias_add(tf.matmul(low["x"], low["w1"]), low["b1"]), approximate=False)),
        "float32 piece, plain ops": tf.function(lambda: gelu_piece(tf.matmul(low["x"], low["w1"]), b1)),
        "float32 piece, XLA": tf.function(lambda: gelu_xla(tf.matmul(low["x"], low["w1"]), b1)),
    }, tf.nn.gelu(x @ w1 + b1, approximate=False),
        floor=tf.function(lambda: tf.matmul(low["x"], low["w1"])))

    def norm_piece(y, bias, r):  # the float32 piece: bias, residual and LayerNorm in float32
        z = tf.cast(y + tf.cast(bias, y.dtype), tf.float32) + tf.cast(r, tf.float32)
        return tf.cast(layer_norm(z, gamma, beta), y.dtype)

    def batch_norm_layout(z):  # tf-keras' LayerNorm: a batch norm over a (1, rows, hidden, 1) view
        z = tf.cast(z, tf.float32)
        rows = tf.shape(z)[0]
        y, _, _ = tf.compat.v1.nn.fused_batch_norm(tf.reshape(z, [1, rows, HIDDEN, 1]), tf.ones([rows]),
                                                   tf.zeros([rows]), epsilon=1e-12, data_format="NCHW")
        return tf.cast(tf.reshape(y, tf.shape(z)) * gamma + beta, tf.bfloat16)

    norm_xla = tf.function(norm_piece, jit_compile=True)
    report("matmul 1536 -> 384, bias, residual, LayerNorm", {
        "float32 piece, plain ops": tf.function(lambda: norm_piece(tf.matmul(low["h"], low["w2"]), b2,
                                                                   low["residual"])),
        "float32 piece, XLA": tf.function(lambda: norm_xla(tf.matmul(low["h"], low["w2"]), b2, low["residual"])),
        "fused bias + residual, batch-norm layout": tf.function(lambda: batch_norm_layout(
            tf.nn.bias_add(tf.matmul(low["h"], low["w2"]), low["b2"]) + low["residual"])),
    }, layer_norm(h @ w2 + b2 + residual, gamma, beta),
        floor=tf.function(lambda: tf.matmul(low["h"], low["w2"])))

    scores = normal(32, HEADS, SEQ, SEQ, scale=3.0)
    mask = np.ones((32, SEQ), "float32")
    mask[:, 100:] = 0.0
    adder = tf.constant((1.0 - mask)[:, None, None, :] * -1e9)

    def softmax_piece(s):
        return tf.cast(tf.nn.softmax(tf.cast(s, tf.float32) + adder, axis=-1), s.dtype)

    softmax_xla = tf.function(softmax_piece, jit_compile=True)
    low_scores, low_adder = tf.cast(scores, tf.bfloat16), tf.cast(adder, tf.bfloat16)
    report("masked softmax, 32 x 12 x 128 x 128", {
        "float32, plain ops": tf.function(lambda: softmax_piece(low_scores)),
        "float32, XLA": tf.function(lambda: softmax_xla(low_scores)),
        "bf16 (oneDNN)": tf.function(lambda: tf.nn.softmax(low_scores + low_adder, axis=-1)),
    }, tf.nn.softmax(scores + adder, axis=-1))


if __name__ == "__main__":
    main()
