"""Fine-tuning throughput: the fixed-shape XLA step (`kbert finetune --jit-compile`, what a TPU runs) against
today's default (dynamic padding, batches grouped by length, a plain tf.function step), on this CPU.

SST-2 sentences classified by all-MiniLM-L6-v2 (or a random `--preset` encoder with its vocabulary), built
with the pipelines `kbert.training.finetune` builds: `Task.dataset` with a dynamically padding preprocessor
and length grouping (default), or padded to `--sequence-length` with the remainder dropped and repeated
(fixed shapes), and `kbert.training.xla.compile_model`. Each variant trains a fresh model (same seed): one
warm-up epoch (tracing, and XLA compiling, its shapes: reported as "first epoch s") and `--epochs` timed
epochs; sequences/s is the rows trained over the timed seconds, median over `--repeats`, the variants
interleaved in each repeat. "fixed shapes, tf.function" separates the cost of padding every row to the full
length from what XLA gains.

    python -m benchmarks.studies.xla_step                                  # MiniLM, 2,048 rows, length 64, batch 32
    python -m benchmarks.studies.xla_step --preset tiny --rows 64 --batch-size 8 --sequence-length 32 --repeats 1
    python -m benchmarks.studies.xla_step --write        # also store the section of docs/investigations/finetune-wall-time.md
"""

from __future__ import annotations

import argparse
import os
import pathlib
import statistics
import time

from benchmarks.common.finetune_tasks import DATA
from benchmarks.common.report import BENCHMARKS_MD, command_line, cpu_name, publish

# The record keeps the summary row; the section lives with the investigation of fine-tuning's wall time.
INVESTIGATION = BENCHMARKS_MD.parent / "docs" / "investigations" / "finetune-wall-time.md"

VARIANTS = ("default: dynamic padding, grouped, tf.function", "fixed shapes, tf.function",
            "fixed shapes, XLA (--jit-compile)")


def build(args, task, encoder_weights, tokenizer):
    """A fresh `task` model on the encoder (same weights every time) and its AdamW recipe."""
    import keras

    from kbert.convert.checkpoints import read_config
    from kbert.models.bert_encoder import BertEncoder

    keras.utils.set_random_seed(args.seed)
    if args.preset:
        encoder = BertEncoder.from_preset(args.preset, vocab_size=tokenizer.vocabulary_size())
    else:
        encoder = BertEncoder(**read_config(args.init).to_dict())
        encoder.set_weights(encoder_weights)
    return task.build_model(encoder)


def run_variant(args, variant: str, task, examples, tokenizer, encoder_weights) -> dict:
    """Trains one fresh model with `variant`'s pipeline and step; returns its timings."""
    from kbert.text import BertPreprocessor
    from kbert.optim import create_optimizer
    from kbert.training.xla import compile_model, fixed_steps_per_epoch

    fixed = variant != VARIANTS[0]
    jit = variant == VARIANTS[2]
    preprocessor = BertPreprocessor(tokenizer, args.sequence_length, padding="fixed" if fixed else "dynamic")
    data = task.dataset(examples, preprocessor, args.batch_size, training=True, seed=args.seed,
                        group_by_length=not fixed, drop_remainder=fixed)
    if fixed:
        steps = fixed_steps_per_epoch(data.size, args.batch_size, args.steps_per_execution if jit else 1)
        dataset, rows = data.dataset.repeat(), steps * args.batch_size
    else:
        steps, dataset, rows = -(-data.size // args.batch_size), data.dataset, data.size
    padded = sum(int(x["padding_mask"].shape[1]) * int(x["padding_mask"].shape[0]) for x, _ in data.dataset.take(steps))
    model = build(args, task, encoder_weights, tokenizer)
    total = steps * (1 + args.epochs)
    compile_model(model, jit_compile=jit, steps_per_execution=args.steps_per_execution if jit else 1,
                  optimizer=create_optimizer(2e-5, total, total // 10))
    fit = dict(steps_per_epoch=steps if fixed else None, verbose=0, shuffle=False)
    began = time.perf_counter()
    model.fit(dataset, epochs=1, **fit)
    first = time.perf_counter() - began
    began = time.perf_counter()
    model.fit(dataset, epochs=args.epochs, **fit)
    seconds = time.perf_counter() - began
    return {"first": first, "per_second": rows * args.epochs / seconds, "steps": steps,
            "padded": padded / (steps * args.batch_size if fixed else data.size)}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--init", help="checkpoint directory (default: all-MiniLM-L6-v2)")
    parser.add_argument("--preset", help="a random encoder of this preset (e.g. mini) with --init's vocabulary")
    parser.add_argument("--data", default=str(DATA / "sst2" / "train.tsv"), help="SST-2 train.tsv")
    parser.add_argument("--rows", type=int, default=2048, help="training sentences (the first ones)")
    parser.add_argument("--sequence-length", type=int, default=64)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--epochs", type=int, default=1, help="timed epochs after the warm-up epoch")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--steps-per-execution", type=int, default=1, help="for the XLA variant")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--write", action="store_true",
                        help="store the table as the xla_step section of docs/investigations/finetune-wall-time.md")
    args = parser.parse_args(argv)

    import tensorflow as tf

    import kbert
    from kbert.tasks import ClassificationTask
    from kbert.text import load_tokenizer

    if args.init is None:
        args.init = str(kbert.pretrained.minilm_path())
    tokenizer = load_tokenizer(args.init)
    weights = None if args.preset else kbert.load_pretrained(args.init).get_weights()
    task = ClassificationTask(text_column="sentence", label_column="label")
    examples = task.read_examples(args.data, args.rows)
    task = task.prepare(args.data, examples)

    results: dict[str, list[dict]] = {v: [] for v in VARIANTS}
    for repeat in range(args.repeats):
        order = VARIANTS if repeat % 2 == 0 else VARIANTS[::-1]
        for variant in order:
            results[variant].append(run_variant(args, variant, task, examples, tokenizer, weights))
    model_name = f"random {args.preset}" if args.preset else pathlib.Path(args.init).name
    load = os.getloadavg()[0]
    lines = [
        "## Fine-tuning step: fixed-shape XLA (`--jit-compile`) against the default, on the CPU",
        "",
        f"Command: `{command_line()}`  ",
        f"Machine: {cpu_name()}, {os.cpu_count()} CPU cores, load average {load:.2f} at the end; "
        f"TensorFlow {tf.__version__}.  ",
        f"{model_name} classifying the first {len(examples)} SST-2 sentences, batch {args.batch_size}, length "
        f"{args.sequence_length}; each variant a fresh model, a warm-up epoch then {args.epochs} timed epoch(s), "
        f"median of {args.repeats} repeat(s), variants interleaved"
        + (f"; XLA with steps_per_execution {args.steps_per_execution}" if args.steps_per_execution > 1 else "")
        + ".",
        "",
        "| variant | padded positions a row | steps an epoch | first epoch s | sequences/s | per repeat | vs default |",
        "|---|---:|---:|---:|---:|---|---:|",
    ]
    baseline = statistics.median(r["per_second"] for r in results[VARIANTS[0]])
    for variant in VARIANTS:
        runs = results[variant]
        rate = statistics.median(r["per_second"] for r in runs)
        each = ", ".join(f"{r['per_second']:.1f}" for r in runs)
        lines.append(f"| {variant} | {runs[0]['padded']:.1f} | {runs[0]['steps']} | "
                     f"{statistics.median(r['first'] for r in runs):.1f} | {rate:.1f} | {each} | "
                     f"**{rate / baseline:.2f}x** |")
    publish("xla_step", "\n".join(lines), write=args.write, path=INVESTIGATION)


if __name__ == "__main__":
    main()
