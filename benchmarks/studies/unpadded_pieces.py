"""Where a batch's time goes once the encoder runs on real tokens only: the export's pieces, each timed alone.

all-MiniLM-L6-v2 on batches of 32 SST-2 dev sentences in file order (../shared/data/sst2/dev.tsv), float32 or
`--precision bfloat16`, as `kbert export` writes it. Timed, each as its own graph on the batch's own tensors:
- the whole strings-in signature, and its `preprocess` signature (tokenizer and packer) alone;
- the encoder on the packed inputs, padded (every position, `token_packing.padded()`) and on real tokens only;
- the pieces of one transformer block on real tokens: query/key/value product, the scatter into the grid,
  attention (scores, masked softmax, context), the gather back, output product with residual and LayerNorm,
  the feed-forward pair; and the entrance (embeddings, pack) and exit (unpack, pooler).
Each figure is the best of 5 x 10 calls averaged over the batches (`bf16_pieces.best_ms`); six blocks and the
entrance and exit make up the encoder, and the rows' sum is printed against the encoder's own time.

    python -m benchmarks.studies.unpadded_pieces [--precision bfloat16] [--batches 8]
"""

from __future__ import annotations

import argparse
import csv
import os
import pathlib

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np
import tensorflow as tf

import kbert
from benchmarks.common.report import cpu_flags_that_matter, cpu_name, host_key, load_average
from benchmarks.studies.bf16_pieces import best_ms
from kbert.export.model_precision import with_precision
from kbert.layers import token_packing

SST2_DEV = pathlib.Path(__file__).resolve().parents[3] / "shared" / "data" / "sst2" / "dev.tsv"


def block_pieces(block, x, mask, positions) -> dict:
    """One block's pieces on real tokens `x` (tokens, hidden), as `BertTransformerBlock._fused_call` runs them."""
    attention = block._self_attention_layer
    hidden, heads = x.shape[-1], block.num_heads
    dtype = x.dtype
    kernel = tf.cast(tf.concat([tf.reshape(d.kernel, [hidden, -1]) for d in
                                (attention._query_dense, attention._key_dense, attention._value_dense)], 1), dtype)
    bias = tf.cast(tf.concat([tf.reshape(d.bias, [-1]) for d in
                              (attention._query_dense, attention._key_dense, attention._value_dense)], 0), dtype)
    output = tf.cast(tf.reshape(attention._output_dense.kernel, [hidden, -1]), dtype)
    inner = tf.cast(block._feedforward_intermediate_dense.kernel, dtype)
    inner_bias = tf.cast(block._feedforward_intermediate_dense.bias, dtype)
    outer = tf.cast(block._feedforward_output_dense.kernel, dtype)
    batch, length = mask.shape
    adder = tf.cast((1.0 - tf.cast(mask, tf.float32))[:, None, None, :] * -1e9, dtype)

    def layer_norm(z):
        z = tf.cast(z, tf.float32)
        mean, variance = tf.nn.moments(z, axes=[-1], keepdims=True)
        return tf.cast((z - mean) * tf.math.rsqrt(variance + 1e-12), dtype)

    qkv = tf.nn.bias_add(tf.matmul(x, kernel), bias)
    grid = token_packing.unpack(qkv, positions, mask)
    parts = [tf.transpose(tf.reshape(p, [batch, length, heads, -1]), [0, 2, 1, 3]) for p in tf.split(grid, 3, -1)]
    context = tf.reshape(tf.transpose(tf.matmul(tf.nn.softmax(tf.matmul(parts[0], parts[1], transpose_b=True) + adder),
                                                parts[2]), [0, 2, 1, 3]), [-1, hidden])
    gathered = tf.gather_nd(context, positions)
    # (function, its tensor arguments): arguments, not captured constants, which the graph could fold away.
    pieces = {
        "query/key/value product (+bias)": (lambda x: tf.nn.bias_add(tf.matmul(x, kernel), bias), (x,)),
        "scatter into the (batch, seq) grid": (lambda qkv, p, m: token_packing.unpack(qkv, p, m),
                                               (qkv, positions, mask)),
        "attention: scores, masked softmax, context": (
            lambda q, k, v, a: tf.matmul(tf.nn.softmax(tf.matmul(q, k, transpose_b=True) + a), v), (*parts, adder)),
        "gather back to real tokens": (lambda c, p: tf.gather_nd(c, p), (context, positions)),
        "output product, residual, LayerNorm": (lambda g, x: layer_norm(tf.matmul(g, output) + x), (gathered, x)),
        "feed-forward: product, bias and GELU, product, residual, LayerNorm": (lambda x: layer_norm(
            tf.matmul(tf.nn.gelu(tf.nn.bias_add(tf.matmul(x, inner), inner_bias)), outer) + x), (x,)),
    }
    return {name: called(fn, args) for name, (fn, args) in pieces.items()}


def called(fn, args):
    """A call of `fn` as a graph on `args`."""
    graph = tf.function(fn)
    return lambda: graph(*args)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--precision", default="float32", choices=("float32", "bfloat16"))
    parser.add_argument("--batches", type=int, default=8, help="batches of 32 timed (each piece averaged over them)")
    args = parser.parse_args()
    with open(SST2_DEV, encoding="utf-8") as f:
        texts = [row["sentence"] for row in csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE)]
    minilm = kbert.pretrained.minilm_path()
    encoder = with_precision(kbert.load_pretrained(minilm), args.precision)
    preprocess = kbert.BertPreprocessor(kbert.load_tokenizer(minilm), sequence_length=128, padding="dynamic")
    dtype = encoder.embeddings.compute_dtype
    rows: dict[str, float] = {}
    real = []
    for start in range(0, 32 * args.batches, 32):
        strings = tf.constant(texts[start:start + 32])
        inputs = {k: tf.cast(v, tf.int32) for k, v in preprocess(strings).items()}
        mask = inputs["padding_mask"]
        real.append(float(tf.reduce_mean(tf.cast(mask, tf.float32))))
        positions = token_packing.token_positions(mask)
        run = called(lambda inputs: encoder(inputs, training=False)["pooled_output"], (inputs,))
        with token_packing.padded():
            padded = called(lambda inputs: encoder(inputs, training=False)["pooled_output"], (inputs,))
            padded()  # traced in the context
        entrance = called(lambda ids, segments, p: token_packing.pack(encoder._embed(ids, segments), p),
                          (inputs["token_ids"], inputs["segment_ids"], positions))
        x = tf.cast(entrance(), dtype)
        timed = {
            "tokenizer and packer (strings -> ids)": called(preprocess, (strings,)),
            "encoder, every position (before)": padded,
            "encoder, real tokens only": run,
            "entrance: embeddings and pack": entrance,
            **{f"one block: {name}": fn
               for name, fn in block_pieces(encoder.transformer_layers[0], x, mask, positions).items()},
            "exit: unpack and pooler": called(lambda x, p, m: encoder.pooler(tf.reshape(
                token_packing.unpack(x, p, m), [mask.shape[0], mask.shape[1], -1])[:, 0]), (x, positions, mask)),
        }
        for name, fn in timed.items():
            rows[name] = rows.get(name, 0.0) + best_ms(fn) / args.batches
    blocks = sum(v for k, v in rows.items() if k.startswith("one block"))
    parts = rows["entrance: embeddings and pack"] + 6 * blocks + rows["exit: unpack and pooler"]
    encoder_ms = rows["encoder, real tokens only"]
    print(f"{cpu_name()} ({host_key()}; {cpu_flags_that_matter()}); load average {load_average()}; "
          f"{args.precision}; {args.batches} batches of 32 SST-2 dev sentences in file order, "
          f"{100 * np.mean(real):.0f}% real tokens\n")
    print(f"| piece | ms per batch | share of the encoder (real tokens) |\n|---|---:|---:|")
    for name, ms in rows.items():
        share = ms * (6 if name.startswith("one block") else 1) / encoder_ms
        note = " (x6 blocks)" if name.startswith("one block") else ""
        print(f"| {name}{note} | {ms:.2f} | {100 * share:.0f}% |"
              if not name.startswith(("tokenizer", "encoder")) else f"| {name} | {ms:.2f} | |")
    print(f"\nThe pieces add up to {parts:.2f} ms against the encoder's {encoder_ms:.2f} ms (the rest: op dispatch "
          f"and what each piece's own graph does not share).")


if __name__ == "__main__":
    main()
