"""Encoder inference throughput: kbert (tf.function, with and without XLA) vs HF PyTorch vs keras-hub.

All run all-MiniLM-L6-v2's weights (6 layers, hidden 384) on the same token ids, sequence length
128, batch 32, in interleaved rounds so that machine noise hits each alike: float32, and bfloat16 (kbert's
encoder under `mixed_bfloat16`, as `kbert export --precision bfloat16` runs it, against PyTorch under
`torch.autocast("cpu", dtype=torch.bfloat16)`). Also measures the machine's float32 and bfloat16 matmul
rates and the fraction of the matching one each implementation achieves.

    python -m benchmarks.encoder_inference [--rounds 5] [--batches 3]
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import time

import kbert  # sets TF_ENABLE_ONEDNN_OPTS=1 before TensorFlow loads

import numpy as np
import tensorflow as tf

from benchmarks.common.report import command_line, publish
from kbert.precision import has_native_bf16


def encoder_flops(config: kbert.BertConfig, batch: int, seq: int) -> float:
    """Multiply-adds x 2 of one forward pass (embeddings and softmax ignored)."""
    h, i, layers = config.hidden_size, config.intermediate_size, config.num_hidden_layers
    per_token = 2 * (4 * h * h + 2 * h * i)  # Q, K, V, output projections and the feed-forward
    attention = 2 * 2 * seq * h  # QK^T and PV, per token
    return batch * seq * layers * (per_token + attention) + 2 * batch * h * h  # + pooler


def matmul_rate(size: int = 2048, repeats: int = 10, dtype: tf.DType = tf.float32) -> float:
    a = tf.cast(tf.random.normal((size, size)), dtype)
    b = tf.cast(tf.random.normal((size, size)), dtype)
    matmul = tf.function(lambda: tf.matmul(a, b))
    matmul().numpy()
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        matmul().numpy()
        best = min(best, time.perf_counter() - start)
    return 2 * size**3 / best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--batches", type=int, default=3, help="batches timed per round and runner")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--sequence-length", type=int, default=128)
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()

    import torch
    import transformers

    torch.set_num_threads(os.cpu_count() or 1)
    path = kbert.pretrained.minilm_path()
    encoder = kbert.load_pretrained(path)
    encoder_bf16 = kbert.load_pretrained(path, dtype="mixed_bfloat16")
    backbone = kbert.to_keras_hub(encoder)  # same weights; exact GELU so its outputs match too
    reference = transformers.BertModel.from_pretrained(str(path)).eval()

    rng = np.random.default_rng(0)
    batch, seq = args.batch_size, args.sequence_length
    token_ids = rng.integers(1000, 30000, (batch, seq)).astype("int32")
    token_ids[:, 0], token_ids[:, -1] = 101, 102
    inputs = {"token_ids": tf.constant(token_ids), "segment_ids": tf.zeros((batch, seq), tf.int32),
              "padding_mask": tf.ones((batch, seq), tf.int32)}
    torch_inputs = {"input_ids": torch.tensor(token_ids).long(),
                    "attention_mask": torch.ones(batch, seq, dtype=torch.long)}

    kbert_graph = tf.function(lambda x: encoder(x, training=False))
    kbert_xla = tf.function(lambda x: encoder(x, training=False), jit_compile=True)
    keras_hub_graph = tf.function(lambda x: backbone(x, training=False))
    kbert_bf16 = tf.function(lambda x: tf.cast(encoder_bf16(x, training=False)["sequence_output"], tf.float32))

    def run_torch():
        with torch.inference_mode():
            return reference(**torch_inputs).last_hidden_state.numpy()

    def run_torch_bf16():
        with torch.inference_mode(), torch.autocast("cpu", dtype=torch.bfloat16):
            return reference(**torch_inputs).last_hidden_state.float().numpy()

    runners = {
        "kbert tf.function": lambda: kbert_graph(inputs)["sequence_output"].numpy(),
        "kbert tf.function + XLA": lambda: kbert_xla(inputs)["sequence_output"].numpy(),
        "HF PyTorch (inference_mode)": run_torch,
        "keras-hub BertBackbone (tf.function)": lambda: keras_hub_graph(inputs)["sequence_output"].numpy(),
        "kbert bfloat16 tf.function": lambda: kbert_bf16(inputs).numpy(),
        "HF PyTorch bf16 autocast": run_torch_bf16,
    }
    outputs = {name: run() for name, run in runners.items()}  # warm-up (traces, XLA compiles)
    for name, out in outputs.items():
        diff = np.abs(out - outputs["HF PyTorch (inference_mode)"]).max()
        print(f"{name}: max |diff| vs PyTorch {diff:.2e}")

    times: dict[str, list[float]] = {name: [] for name in runners}
    for round_index in range(args.rounds):
        for name, run in runners.items():
            start = time.perf_counter()
            for _ in range(args.batches):
                run()
            times[name].append((time.perf_counter() - start) / args.batches)
        print(f"round {round_index + 1}: " + ", ".join(f"{n} {batch / t[-1]:.1f}" for n, t in times.items()))

    peak = matmul_rate()
    peak_bf16 = matmul_rate(dtype=tf.bfloat16)
    flops = encoder_flops(encoder.bert_config, batch, seq)
    rate = {name: batch / statistics.median(t) for name, t in times.items()}
    kbert_best = max(rate[n] for n in rate if n.startswith("kbert"))
    torch_best = max(rate["HF PyTorch (inference_mode)"], rate["HF PyTorch bf16 autocast"])
    lines = [
        "## Encoder inference (all-MiniLM-L6-v2, sequence length 128, batch 32)",
        "",
        f"Command: `{command_line()}`  ",
        f"Machine: {platform.machine()}, {os.cpu_count()} cores, TF {tf.__version__}, torch {torch.__version__}, "
        f"TF_ENABLE_ONEDNN_OPTS={os.environ.get('TF_ENABLE_ONEDNN_OPTS')}.  ",
        f"Matmul rate (TF, 2048x2048): float32 {peak / 1e9:.1f}, bfloat16 {peak_bf16 / 1e9:.1f} GFLOP/s "
        f"(CPU {'with' if has_native_bf16() else 'without'} native bfloat16). One forward pass is "
        f"{flops / 1e9:.1f} GFLOP. Median of {args.rounds} interleaved rounds of {args.batches} batches.",
        "",
        "| implementation | sequences/s | vs HF PyTorch | vs PyTorch's best | vs keras-hub | "
        "fraction of its dtype's matmul rate |",
        "|---|---|---|---|---|---|",
    ]
    for name, value in rate.items():
        matmul = peak_bf16 if "bf" in name else peak
        lines.append(
            f"| {name} | {value:.1f} | {value / rate['HF PyTorch (inference_mode)']:.2f}x | "
            f"{value / torch_best:.2f}x | {value / rate['keras-hub BertBackbone (tf.function)']:.2f}x | "
            f"{value * flops / batch / matmul:.0%} |"
        )
    lines += [
        "",
        f"Best kbert vs PyTorch's best (float32 or bf16 autocast): {kbert_best / torch_best:.2f}x; "
        f"vs keras-hub: {kbert_best / rate['keras-hub BertBackbone (tf.function)']:.2f}x. kbert bfloat16 reaches "
        f"{rate['kbert bfloat16 tf.function'] * flops / batch / peak_bf16:.0%} of the bfloat16 matmul rate.",
    ]
    publish("encoder_inference", "\n".join(lines), write=not args.no_write)


if __name__ == "__main__":
    main()
