"""`kbert pretrain` end to end against its bare training step, on the same data and model.

The model is `mini` (4 layers, hidden 256). The bare step is `benchmarks.pretraining`'s kbert runner
(`BertPretrainer.train_on_batch`, the same optimizer) on batches read from the data directory beforehand
(no input pipeline, no callbacks). End to end is the `kbert pretrain` command on the same directory: its
tf.data pipeline (TFRecords, dynamic masking), checkpoints every `--save-every-steps`, crash-resume
backups, TensorBoard and the progress bar. Its steps per second are read from the timestamps of the
progress lines, first step (after tracing) to last; the whole command's wall time is reported beside.
The goal is end to end within 10% of the bare step.

    python -m benchmarks.pretrain_loop [--steps 90] [--save-every-steps 30] [--no-write]
"""

from __future__ import annotations

import argparse
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile
import time

import kbert  # sets TF_ENABLE_ONEDNN_OPTS=1; must come before TensorFlow

import keras

from benchmarks.finetune_quality import run_timed
from benchmarks.common.finetune_tasks import kbert_command
from benchmarks.pretraining import kbert_runner
from benchmarks.common.report import command_line, cpu_name, publish
from kbert.pretraining_data.tfrecords import load_pretraining_dataset

REPO = pathlib.Path(__file__).resolve().parents[1]
CORPUS = REPO.parent / "shared" / "data" / "corpora" / "en_gutenberg_nltk" / "austen-emma.txt"
_PROGRESS = re.compile(r"^\s*([0-9.]+) +\d+/\d+\b")  # a timestamped progress line of `run_timed`


def build_data(corpus: pathlib.Path, vocab: pathlib.Path, out: pathlib.Path, args: argparse.Namespace) -> None:
    """`kbert create-pretraining-data` (dynamic masking, NSP) on `corpus` into `out`."""
    subprocess.run([*kbert_command(), "create-pretraining-data", "--input", str(corpus), "--vocab", str(vocab),
                    "--out", str(out), "--sequence-length", str(args.sequence_length),
                    "--max-predictions-per-seq", str(args.max_predictions), "--masking", "dynamic",
                    "--num-shards", "2"], check=True, capture_output=True, text=True)


def bare_step(data: pathlib.Path, args: argparse.Namespace) -> float:
    """Steps per second of `benchmarks.pretraining`'s kbert runner on batches of `data`, after a warm-up."""
    dataset = load_pretraining_dataset(data, args.batch_size, repeat=True, seed=0)
    batches = [b for b, _ in zip(dataset, range(args.bare_steps))]
    step = kbert_runner(batches, jit_compile=False, vocab_size=kbert.load_tokenizer(data).vocabulary_size())
    for i in range(2):
        step(i)
    began = time.perf_counter()
    for i in range(args.bare_steps):
        step(i)
    return args.bare_steps / (time.perf_counter() - began)


def end_to_end(data: pathlib.Path, out: pathlib.Path, log: pathlib.Path, args: argparse.Namespace) -> dict:
    """Runs `kbert pretrain`; its steps per second from the progress lines, and the whole wall time."""
    command = [*kbert_command(), "pretrain", "--train", str(data), "--out", str(out), "--preset", "mini",
               "--steps", str(args.steps), "--batch-size", str(args.batch_size), "--learning-rate",
               str(args.learning_rate), "--save-every-steps", str(args.save_every_steps), "--verbose", "1",
               "--mixed-precision", "none"]  # float32, like the bare step
    timed = run_timed(command, log)
    stamps = [float(match.group(1)) for line in log.read_text(encoding="utf-8").splitlines()
              if (match := _PROGRESS.match(line))]
    if len(stamps) < 2:
        raise RuntimeError(f"no progress lines in {log}")
    first, last = stamps[0], stamps[-1]  # the end of step 1 and of the last step (Keras repeats an epoch's last line)
    return {"steps_per_second": (args.steps - 1) / (last - first), "wall_seconds": timed["wall_seconds"],
            "first_step_seconds": first, "steps": args.steps}


def report(bare: float, e2e: dict, args: argparse.Namespace, corpus: pathlib.Path, load_start: float) -> str:
    ratio = e2e["steps_per_second"] / bare
    load = os.getloadavg()[0]
    return "\n".join([
        f"## `kbert pretrain` end to end against its bare step (mini, sequence {args.sequence_length}, "
        f"batch {args.batch_size})",
        "",
        f"Command: `{command_line()}`  ",
        f"Machine: {cpu_name()}, {os.cpu_count()} CPU cores, load average {load_start:.2f} at the start, "
        f"{load:.2f} at the end; "
        f"Keras {keras.__version__}.  ",
        f"Data: `kbert create-pretraining-data` on {corpus.name} (all-MiniLM-L6-v2 vocabulary, dynamic "
        f"masking, NSP). End to end: {e2e['steps']} steps, a checkpoint every {args.save_every_steps}; steps/s "
        "from the first progress line (after tracing) to the last. Bare: `train_on_batch` on "
        f"{args.bare_steps} batches read beforehand, after 2 warm-up steps.",
        "",
        "| | steps/s | vs bare step | whole command s | to step 1 s |",
        "|---|---:|---:|---:|---:|",
        f"| bare `train_on_batch` | {bare:.3f} | 1.00x | | |",
        f"| `kbert pretrain` | {e2e['steps_per_second']:.3f} | {ratio:.2f}x | {e2e['wall_seconds']:.1f} | "
        f"{e2e['first_step_seconds']:.1f} |",
        "",
        f"End to end / bare = {ratio:.2f} (goal >= 0.90: {'yes' if ratio >= 0.9 else '**no**'}).",
    ])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=90, help="steps of the `kbert pretrain` run")
    parser.add_argument("--save-every-steps", type=int, default=30)
    parser.add_argument("--bare-steps", type=int, default=20, help="timed `train_on_batch` steps")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--sequence-length", type=int, default=128)
    parser.add_argument("--max-predictions", type=int, default=20)
    parser.add_argument("--learning-rate", type=float, default=1e-4)
    parser.add_argument("--corpus", type=pathlib.Path, default=CORPUS, help="plain text, one sentence or line each")
    parser.add_argument("--no-write", action="store_true", help="print only; leave BENCHMARKS.md alone")
    args = parser.parse_args(argv)
    load_start = os.getloadavg()[0]
    if not args.corpus.is_file():
        print(f"no corpus at {args.corpus} (pass --corpus FILE)", file=sys.stderr)
        return 2
    work = pathlib.Path(tempfile.mkdtemp(prefix="kbert-pretrain-loop-"))
    try:
        data = work / "data"
        build_data(args.corpus, pathlib.Path(kbert.pretrained.minilm_path()) / "vocab.txt", data, args)
        bare = bare_step(data, args)
        e2e = end_to_end(data, work / "run", work / "pretrain.log", args)
        publish("pretrain_loop", report(bare, e2e, args, args.corpus, load_start), write=not args.no_write)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
