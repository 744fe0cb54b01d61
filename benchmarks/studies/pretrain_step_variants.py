"""The pretraining recipes' step, compiled four ways: float32 or mixed_bfloat16, `tf.function` or XLA.

Builds the recipes' model (`tiny`, no dropout, masked LM alone, `create_optimizer` with lr 1e-3, weight decay
0.01, clipping at 1.0) for the vocabulary of a `kbert create-pretraining-data` directory, reads 8 of its
batches beforehand and times `train_on_batch` on them after tracing and warm-up steps. Each variant runs in
a process of its own, since the mixed-precision policy is process-wide. Each variant has an ablation,
`<variant>_keras_hub_call`, whose blocks run keras-hub's `TransformerEncoder.call` on the same layers.

    python -m benchmarks.studies.pretrain_step_variants --data runs/q_zh/data --batch-size 64
    python -m benchmarks.studies.pretrain_step_variants --data runs/q_zh/data_seq32 --batch-size 128 --variants float32,xla
    python -m benchmarks.studies.pretrain_step_variants --data runs/q_en/data --batch-size 64 --variants xla,xla_keras_hub_call
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

from benchmarks.common.report import add_variant_arguments, chosen_variants, run_in_own_process

VARIANTS = {"float32": ("none", False), "xla": ("none", True),
            "bf16": ("mixed_bfloat16", False), "bf16_xla": ("mixed_bfloat16", True)}
# Ablations of kbert's transformer block: the same layers and weights, run by keras-hub's `call`.
KERAS_HUB_CALL = {f"{name}_keras_hub_call": how for name, how in VARIANTS.items()}


def time_variant(data: str, batch_size: int, variant: str, rounds: int, steps: int) -> list[float]:
    """Milliseconds a step in each round of `steps` steps."""
    import kbert  # noqa: F401  (sets TF_ENABLE_ONEDNN_OPTS before TensorFlow)
    from kbert.config import BertConfig
    from kbert.models.bert_encoder import BertEncoder
    from kbert.models.bert_pretrainer import BertPretrainer
    from kbert.optim import create_optimizer
    from kbert.pretraining_data.shards import read_pretraining_metadata
    from kbert.pretraining_data.tfrecords import load_pretraining_dataset
    from kbert.training.mixed_precision import set_mixed_precision

    policy, jit_compile = {**VARIANTS, **KERAS_HUB_CALL}[variant]
    set_mixed_precision(policy)
    vocab_size = read_pretraining_metadata(data)["vocab_size"]
    batches = [b for b, _ in zip(load_pretraining_dataset(data, batch_size, repeat=True, seed=1), range(8))]
    encoder = BertEncoder(**BertConfig.from_preset(
        "tiny", vocab_size=vocab_size, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0).to_dict())
    if variant in KERAS_HUB_CALL:
        from benchmarks.pretraining import use_keras_hub_call

        use_keras_hub_call(encoder)
    pretrainer = BertPretrainer(encoder, objective="none")
    pretrainer.compile(optimizer=create_optimizer(1e-3, num_train_steps=10_000, warmup_steps=100,
                                                  weight_decay=0.01, clipnorm=1.0), jit_compile=jit_compile)
    for i in range(6):  # the first traces (and compiles)
        pretrainer.train_on_batch(batches[i % 8])
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        for i in range(steps):
            pretrainer.train_on_batch(batches[i % 8])
        times.append((time.perf_counter() - start) / steps * 1e3)
    return times


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", required=True, help="a kbert create-pretraining-data directory")
    parser.add_argument("--batch-size", type=int, default=64)
    add_variant_arguments(parser, list(VARIANTS), steps=20, ablations=list(KERAS_HUB_CALL))
    args = parser.parse_args(argv)
    if args.one:
        print(json.dumps(time_variant(args.data, args.batch_size, args.one, args.rounds, args.steps)))
        return 0
    variants = chosen_variants(parser, args, [*VARIANTS, *KERAS_HUB_CALL])
    print(f"load average at the start: {os.getloadavg()[0]:.2f}")
    print(f"| step ({args.data}, batch {args.batch_size}) | ms a step, per round |\n|---|---|")
    for variant in variants:
        times = run_in_own_process("benchmarks.studies.pretrain_step_variants", variant, [
            "--data", args.data, "--batch-size", str(args.batch_size), "--rounds", str(args.rounds),
            "--steps", str(args.steps)])
        print(f"| {variant} | {', '.join(f'{t:.1f}' for t in times)} |", flush=True)
    print(f"load average at the end: {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
