"""The floor under the `mini` pretraining step: its matmuls timed alone, and what dropout costs alone.

The step of `benchmarks.pretraining` (mini: 4 layers, hidden 256, 4 heads, intermediate 1024, vocabulary
30,522; batch 32 x 128, 20 masked positions a sequence) spends its FLOPs in a few GEMM shapes. Each is
timed here as the forward product, the input-gradient product and the weight-gradient product, so their
sum is the time the step would take if it did nothing but matmuls. Dropout is timed forward and
backward on the two tensor shapes it drops out (hidden states and attention probabilities), as Keras
draws it (a float32 uniform an element) and with 16 random bits an element.

    python -m benchmarks.studies.step_floor
"""

from __future__ import annotations

import time

import tensorflow as tf

BATCH, SEQ, HIDDEN, INTERMEDIATE, LAYERS, HEADS, PREDICTIONS, VOCAB = 32, 128, 256, 1024, 4, 4, 20, 30522
RATE = 0.1


def best_seconds(fn, repeats: int = 5) -> float:
    for _ in range(3):
        fn()
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def matmul_floor() -> None:
    tokens, masked = BATCH * SEQ, BATCH * PREDICTIONS
    # (rows, inner, columns, times a step): Q, K, V and output projections; the two feed-forward
    # products; the MLM transform and the decoder over the vocabulary.
    gemms = [(tokens, HIDDEN, HIDDEN, 4 * LAYERS), (tokens, HIDDEN, INTERMEDIATE, LAYERS),
             (tokens, INTERMEDIATE, HIDDEN, LAYERS), (masked, HIDDEN, HIDDEN, 1), (masked, HIDDEN, VOCAB, 1)]
    matmul = tf.function(lambda a, b, ta, tb: tf.linalg.matmul(a, b, transpose_a=ta, transpose_b=tb))
    flops = seconds = 0.0
    for m, k, n, count in gemms:
        x, w, dy = tf.random.normal((m, k)), tf.random.normal((k, n)), tf.random.normal((m, n))
        parts = [best_seconds(lambda: matmul(x, w, False, False)), best_seconds(lambda: matmul(dy, w, False, True)),
                 best_seconds(lambda: matmul(x, dy, True, False))]
        flops += 3 * 2 * m * k * n * count
        seconds += sum(parts) * count
        print(f"{m} x {k} x {n}, {count} a step: forward / input grad / weight grad "
              f"{' / '.join(f'{p * 1e3:.2f}' for p in parts)} ms, {6 * m * k * n / sum(parts) / 1e9:.0f} GFLOP/s")
    head = HIDDEN // HEADS  # attention: scores (SEQ x head by head x SEQ) and the weighted sum, each layer
    q, kt = tf.random.normal((BATCH * HEADS, SEQ, head)), tf.random.normal((BATCH * HEADS, head, SEQ))
    batched = best_seconds(lambda: matmul(q, kt, False, False))
    flops += 3 * 2 * 2 * BATCH * HEADS * SEQ * head * SEQ * LAYERS
    seconds += 3 * 2 * batched * LAYERS
    print(f"attention {BATCH * HEADS} x {SEQ} x {head} x {SEQ}, {2 * LAYERS} a step: {batched * 1e3:.2f} ms each")
    print(f"matmuls of one step: {flops / 1e9:.1f} GFLOP in {seconds * 1e3:.0f} ms ({flops / seconds / 1e9:.0f} "
          f"GFLOP/s); a step of matmuls alone would run {BATCH / seconds:.1f} sequences/s")


def keras_dropout(x, seed):
    return tf.nn.experimental.stateless_dropout(x, rate=RATE, seed=seed)  # what keras.random.dropout calls


def dropout_16_bits(x, seed):
    shape = tf.shape(x)
    halves = tf.random.stateless_uniform(tf.concat([shape[:-1], [shape[-1] // 2]], 0), seed=seed,
                                         dtype=tf.int32, minval=None, maxval=None)
    bits = tf.reshape(tf.bitcast(halves, tf.int16), shape)
    keep = bits >= int(round(RATE * 2**16)) - 2**15
    return tf.where(keep, x / (1 - RATE), tf.zeros_like(x))


def dropout_cost() -> None:
    shapes = {"hidden states": (BATCH, SEQ, HIDDEN), "attention probabilities": (BATCH, HEADS, SEQ, SEQ)}
    variants = {"none": lambda x, seed: x, "Keras": keras_dropout, "16 random bits": dropout_16_bits}
    for name, shape in shapes.items():
        x, row = tf.random.normal(shape), []
        for label, fn in variants.items():
            @tf.function
            def forward_backward(x, seed, fn=fn):
                with tf.GradientTape() as tape:
                    tape.watch(x)
                    y = fn(x, seed)
                    loss = tf.reduce_sum(y * y)
                return tape.gradient(loss, x)

            row.append(f"{label} {best_seconds(lambda: forward_backward(x, tf.constant([1, 2]))) * 1e3:.2f} ms")
        print(f"dropout on {name} {shape}, forward and backward: " + ", ".join(row))


def main() -> None:
    matmul_floor()
    dropout_cost()


if __name__ == "__main__":
    main()
