"""One fine-tuning step, kbert against transformers + PyTorch: all-MiniLM-L6-v2 classifying, batch 32, length 64.

The step alone (no data pipeline, no tracing): kbert's `BertClassifier.train_on_batch` with its default
compile (AdamW, clipping 1.0) in float32, with XLA and under mixed_bfloat16, against
`BertForSequenceClassification` with SDPA attention, AdamW (eps 1e-6, weight decay 0.01) and clipping at
1.0 in float32. Separates the step from the rest of the whole-process wall time that
`finetune_quality --wall-time` measures. A second table times the optimizer's update alone (clipping
included) on fixed gradients for the model's 22.7 million weights: kbert's AdamW (TensorFlow's fused Adam
kernel), Keras' AdamW (element-wise ops) and `torch.optim.AdamW` (its default for-loop and `fused=True`).

Each implementation runs in a process of its own, one process at a time, rounds interleaved: sharing a
process with TensorFlow's thread pools moved the ratio by about 10% in kbert's favour on a 2-core Intel
Xeon (PyTorch 808-849 ms a step beside kbert, 784 ms alone).

    python -m benchmarks.finetune_step [--rounds 3] [--steps 10] [--no-write]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from typing import Callable

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras
import numpy as np

import kbert
from kbert.optim import create_optimizer
from benchmarks.common.report import command_line, cpu_name, publish

BATCH, LENGTH = 32, 64


def make_batch(seed: int = 0) -> tuple[dict[str, np.ndarray], np.ndarray]:
    rng = np.random.default_rng(seed)
    ids = rng.integers(1000, 20000, (BATCH, LENGTH)).astype("int32")
    inputs = {"token_ids": ids, "segment_ids": np.zeros_like(ids), "padding_mask": np.ones(ids.shape, bool)}
    return inputs, rng.integers(0, 2, BATCH).astype("int32")


def kbert_runner(*, jit_compile: bool = False, policy: str = "float32") -> Callable[[], None]:
    keras.mixed_precision.set_global_policy(policy)  # for every layer the model builds, head included
    try:
        model = kbert.BertClassifier(kbert.load_pretrained(kbert.pretrained.minilm_path()), num_classes=2)
        model.compile(jit_compile=jit_compile)
    finally:
        keras.mixed_precision.set_global_policy("float32")
    x, y = make_batch()
    return lambda: model.train_on_batch(x, y)


def torch_runner() -> Callable[[], None]:
    import torch
    from transformers import BertForSequenceClassification

    torch.manual_seed(0)
    model = BertForSequenceClassification.from_pretrained(
        str(kbert.pretrained.minilm_path()), num_labels=2, attn_implementation="sdpa").train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=5e-5, eps=1e-6, weight_decay=0.01)
    x, y = make_batch()
    ids = torch.tensor(x["token_ids"], dtype=torch.long)
    mask = torch.ones_like(ids)
    labels = torch.tensor(y, dtype=torch.long)

    def step() -> None:
        optimizer.zero_grad(set_to_none=True)
        loss = model(input_ids=ids, attention_mask=mask, labels=labels).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        loss.item()

    return step


def kbert_update_runner(make_optimizer: Callable[[], keras.optimizers.Optimizer]) -> Callable[[], None]:
    import tensorflow as tf

    encoder = kbert.load_pretrained(kbert.pretrained.minilm_path())
    variables = kbert.BertClassifier(encoder, num_classes=2).trainable_variables
    optimizer = make_optimizer()
    optimizer.build(variables)
    rng = np.random.default_rng(0)
    grads = [tf.constant(rng.normal(0.0, 1e-3, v.shape).astype("float32")) for v in variables]
    apply = tf.function(lambda g: optimizer.apply_gradients(zip(g, variables)))
    return lambda: apply(grads)


def keras_adamw() -> keras.optimizers.Optimizer:
    optimizer = keras.optimizers.AdamW(learning_rate=5e-5, weight_decay=0.01, epsilon=1e-6, global_clipnorm=1.0)
    optimizer.exclude_from_weight_decay(var_names=["bias", "gamma", "beta"])
    return optimizer


def torch_update_runner(**adamw_options: bool) -> Callable[[], None]:
    import torch
    from transformers import BertForSequenceClassification

    model = BertForSequenceClassification.from_pretrained(str(kbert.pretrained.minilm_path()), num_labels=2)
    named = list(model.named_parameters())
    no_decay = ("bias", "LayerNorm.weight")
    optimizer = torch.optim.AdamW(
        [{"params": [p for n, p in named if not any(k in n for k in no_decay)], "weight_decay": 0.01},
         {"params": [p for n, p in named if any(k in n for k in no_decay)], "weight_decay": 0.0}],
        lr=5e-5, eps=1e-6, **adamw_options)
    generator = torch.Generator().manual_seed(0)
    for _, p in named:
        p.grad = torch.randn(p.shape, generator=generator) * 1e-3

    def step() -> None:
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()

    return step


RUNNERS: dict[str, Callable[[], Callable[[], None]]] = {
    "kbert BertClassifier (tf.function)": kbert_runner,
    "kbert BertClassifier (XLA)": lambda: kbert_runner(jit_compile=True),
    "kbert BertClassifier (mixed_bfloat16)": lambda: kbert_runner(policy="mixed_bfloat16"),
    "HF PyTorch BertForSequenceClassification": torch_runner,
}
REFERENCE = "HF PyTorch BertForSequenceClassification"
UPDATE_RUNNERS: dict[str, Callable[[], Callable[[], None]]] = {
    "kbert AdamW (fused Adam kernel)": lambda: kbert_update_runner(lambda: create_optimizer(5e-5)),
    "Keras AdamW (element-wise ops)": lambda: kbert_update_runner(keras_adamw),
    "torch.optim.AdamW (default, for-loop)": torch_update_runner,
    "torch.optim.AdamW (fused=True)": lambda: torch_update_runner(fused=True),
}
UPDATE_REFERENCE = "torch.optim.AdamW (default, for-loop)"


def time_steps(name: str, steps: int) -> float:
    """Seconds a step of runner `name`, mean of `steps` after 3 warm-up steps (tracing, oneDNN primitives)."""
    import torch

    torch.set_num_threads(os.cpu_count() or 1)
    step = {**RUNNERS, **UPDATE_RUNNERS}[name]()
    for _ in range(3):
        step()
    start = time.perf_counter()
    for _ in range(steps):
        step()
    return (time.perf_counter() - start) / steps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--steps", type=int, default=10, help="timed steps per round")
    parser.add_argument("--no-write", action="store_true")
    # One runner, in this process:
    parser.add_argument("--only", choices=[*RUNNERS, *UPDATE_RUNNERS], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.only:
        print(json.dumps({"seconds": time_steps(args.only, args.steps)}))
        return

    import torch

    load = os.getloadavg()[0]
    times: dict[str, list[float]] = {name: [] for name in [*RUNNERS, *UPDATE_RUNNERS]}
    for _ in range(args.rounds):
        for name in times:
            out = subprocess.run([sys.executable, "-m", "benchmarks.finetune_step", "--only", name,
                                  "--steps", str(args.steps)], check=True, capture_output=True, text=True)
            times[name].append(json.loads(out.stdout.strip().splitlines()[-1])["seconds"])
    reference = statistics.median(times[REFERENCE])
    lines = [
        "## Fine-tuning step: kbert vs. transformers + PyTorch (all-MiniLM-L6-v2, batch 32, length 64)",
        "",
        f"Command: `{command_line()}`  ",
        f"Machine: {cpu_name()}, {os.cpu_count()} CPU cores, load average {load:.2f} at the start, "
        f"{os.getloadavg()[0]:.2f} at the end; torch {torch.__version__} ({os.cpu_count()} threads).  ",
        f"One optimizer step on one fixed batch; each implementation in a process of its own, {args.rounds} "
        f"rounds, each the mean of {args.steps} steps after 3 warm-up steps; median over rounds. kbert: "
        "`BertClassifier.compile()` defaults (AdamW, clipping 1.0); PyTorch: SDPA attention, AdamW eps 1e-6, "
        "weight decay 0.01, clipping 1.0, float32.",
        "",
        "| implementation | ms a step | examples/s | per round (ms) | vs PyTorch |",
        "|---|---:|---:|---|---:|",
    ]
    for name in RUNNERS:
        median = statistics.median(times[name])
        rounds = ", ".join(f"{1000 * t:.0f}" for t in times[name])
        lines.append(f"| {name} | {1000 * median:.0f} | {BATCH / median:.1f} | {rounds} | "
                     f"**{reference / median:.2f}x** |")
    update_reference = statistics.median(times[UPDATE_REFERENCE])
    lines += ["", "The optimizer's update alone (global-norm clipping at 1.0, then AdamW with weight decay 0.01 "
              "except biases and LayerNorm) on fixed gradients for the 22.7 million weights, same protocol:", "",
              "| optimizer | ms an update | per round (ms) | vs torch default |", "|---|---:|---|---:|"]
    for name in UPDATE_RUNNERS:
        median = statistics.median(times[name])
        rounds = ", ".join(f"{1000 * t:.1f}" for t in times[name])
        lines.append(f"| {name} | {1000 * median:.1f} | {rounds} | **{update_reference / median:.2f}x** |")
    publish("finetune_step", "\n".join(lines), write=not args.no_write)


if __name__ == "__main__":
    main()
