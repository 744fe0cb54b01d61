"""Dropout in the XLA-compiled pretraining step on CPU: what it costs, and what another random source would save.

The `mini` step of `benchmarks.pretraining` (4 layers, hidden 256, vocabulary 30,522; sequence 128, batch 32;
dropout 0.1), for kbert's `BertPretrainer` and keras-hub's `BertMaskedLM`, compiled with XLA
(`jit_compile=True`), with Keras' dropout drawing its keep mask from one of these sources:

- `keras`: Keras 3 as it is (`tf.nn.experimental.stateless_dropout`, TensorFlow's auto-selected generator);
- `threefry`: the same uniform numbers from `tf.random.stateless_uniform(alg="threefry")`;
- `hash`: 32 bits an element from a counter hash (MurmurHash3's 32-bit finaliser of the element's index
  mixed with the seed), integer arithmetic that XLA fuses into the step;
- `off`: dropout 0, the floor.

Each variant runs in a process of its own, since the sources are patched into Keras' TensorFlow backend in
that process: they measure what a different random source would gain, they are not kbert code.

    python -m benchmarks.studies.xla_dropout [--variants kbert:keras,kbert:threefry,...] [--rounds 3] [--steps 5]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

from benchmarks.common.report import add_variant_arguments, chosen_variants, run_in_own_process

VARIANTS = ("kbert:keras", "kbert:threefry", "kbert:hash", "kbert:off", "keras-hub:keras", "keras-hub:threefry")


def patch_dropout(source: str) -> None:
    """Make Keras' TensorFlow dropout draw its mask from `source` ("threefry" or "hash") in this process."""
    import tensorflow as tf
    from keras.src.backend.tensorflow import random as tf_random

    def keep_mask(shape, seed, rate: float):
        if source == "threefry":
            return tf.random.stateless_uniform(shape, seed=seed, alg="threefry") >= rate
        index = tf.reshape(tf.range(tf.reduce_prod(shape), dtype=tf.int32), shape)
        bits = tf.bitcast(index * -1640531535 + (seed[0] * 668265263 ^ seed[1]), tf.uint32)
        for shift, multiplier in ((16, -2048144789), (13, -1028477387)):  # 0x85EBCA6B, 0xC2B2AE35
            bits = bits ^ tf.bitwise.right_shift(bits, tf.constant(shift, tf.uint32))
            bits = tf.bitcast(tf.bitcast(bits, tf.int32) * multiplier, tf.uint32)
        bits = bits ^ tf.bitwise.right_shift(bits, tf.constant(16, tf.uint32))
        return bits >= tf.constant(int(rate * 2**32), tf.uint32)

    def dropout(inputs, rate, noise_shape=None, seed=None):
        if rate == 0.0:
            return inputs
        seed = tf_random._cast_seed(tf_random.draw_seed(seed))
        keep = keep_mask(tf_random._get_concrete_noise_shape(inputs, noise_shape), seed, rate)
        return tf.where(keep, inputs / tf.cast(1.0 - rate, inputs.dtype), tf.zeros((), inputs.dtype))

    tf_random.dropout = dropout


def time_variant(variant: str, rounds: int, steps: int) -> dict:
    """Sequences a second in each round, and the fraction a dropout kept on a test tensor under XLA."""
    import kbert  # noqa: F401  (sets TF_ENABLE_ONEDNN_OPTS before TensorFlow)
    import keras
    import tensorflow as tf

    from benchmarks.pretraining import keras_hub_runner, kbert_runner, make_batches

    model, source = variant.split(":")
    if source in ("threefry", "hash"):
        patch_dropout(source)
    batches = make_batches(4, 32, 128, 20)
    if model == "kbert":
        rate = 0.0 if source == "off" else 0.1
        # keras-hub's block call, whose dropout is Keras' (kbert's own training path draws ThreeFry masks itself)
        step = kbert_runner(batches, jit_compile=True, keras_hub_blocks=True, hidden_dropout_prob=rate,
                            attention_probs_dropout_prob=rate)
    else:
        step = keras_hub_runner(batches, jit_compile=True)
    for i in range(3):  # the first compiles
        step(i)
    rates = []
    for _ in range(rounds):
        start = time.perf_counter()
        for i in range(steps):
            step(i)
        rates.append(steps * 32 / (time.perf_counter() - start))
    if source == "off":
        return {"rates": rates, "kept": None}
    layer = keras.layers.Dropout(0.1, seed=1)
    kept = tf.function(lambda x: tf.reduce_mean(tf.cast(layer(x, training=True) != 0, tf.float32)),
                       jit_compile=True)(tf.ones((32, 128, 256)))
    return {"rates": rates, "kept": float(kept)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_variant_arguments(parser, VARIANTS, steps=5)
    args = parser.parse_args(argv)
    if args.one:
        print(json.dumps(time_variant(args.one, args.rounds, args.steps)))
        return 0
    variants = chosen_variants(parser, args, VARIANTS)
    print(f"load average at the start: {os.getloadavg()[0]:.2f}")
    print("| model: dropout source | sequences/s (median) | per round | kept by a 0.1 dropout |\n|---|---:|---|---:|")
    for variant in variants:
        result = run_in_own_process("benchmarks.studies.xla_dropout", variant,
                                    ["--rounds", str(args.rounds), "--steps", str(args.steps)])
        rates = result["rates"]
        kept = "-" if result["kept"] is None else f"{result['kept']:.4f}"
        print(f"| {variant} | {sorted(rates)[len(rates) // 2]:.1f} | {', '.join(f'{r:.1f}' for r in rates)} "
              f"| {kept} |", flush=True)
    print(f"load average at the end: {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
