"""Fine-tuning quality and wall time: `kbert finetune` vs. a transformers + PyTorch reference, same recipe.

Every run is a separate process, so TF and torch state never mix and the wall time is the whole job
(imports, model load, tokenization, tracing, training, saving, evaluation): kbert through its CLI,
`kbert finetune classify|tag|qa`, the reference through `python -m benchmarks.common.hf_reference` with the
same flags (AdamW, epsilon 1e-6, weight decay 0.01 except biases and LayerNorm, clipping at 1.0,
dropout 0.1, linear warmup 10% + linear decay, batch 32, dynamic padding), both from all-MiniLM-L6-v2.

Tasks, from ../shared/data: SST-2 (first N training rows, accuracy on dev), a sentence-pair task
(`benchmarks.common.pair_task`: SQuAD v1.1 questions with the sentence that holds the answer or another
sentence of the article; train on articles 0-39, accuracy on 40-47), CoNLL-2003 NER (first N training
sentences, entity F1 on test) and SQuAD v1.1 windows (first N questions of articles 0-39, EM/F1 on
40-47; both sides train on the windows of `build_qa_features`, the reference reads them from a file).

Each task runs at every training size and seed; the table shows mean ± std (min–max) per size and the
goal (`benchmarks.common.seed_spread`); with more than 3 seeds a side, `benchmarks.studies.goal_odds` reads the same
JSON and says how often a 3-seed table would meet the goals. `--wall-time` writes the wall-time table
first (whole process, reference / kbert ratio, examples/s, and the phases read from the timestamped
progress lines: start to the first optimizer step, training, saving + evaluation), kbert's own phases
as `kbert finetune` prints them (load, first step, train, evaluate, save, and the rest of the process:
imports and exit), then the same runs' scores.

    python -m benchmarks.finetune_quality --tasks sst2,pairs,conll --sizes 500 1000 2000 4000 8000 \
        --conll-sizes 1000 5000 --seeds 0 1 2 --json runs.json --resume
    python -m benchmarks.finetune_quality --wall-time --tasks sst2,conll --sizes 2000 --conll-sizes 3000 \
        --seeds 0 1 2 --json wall.json --resume

Every finished run is saved to the JSON at once; `--resume` skips the runs already there, so an
interrupted benchmark continues, and a later command with other tasks adds rows to the same table.
Smoke test: `--sizes 64 --conll-sizes 64 --squad-sizes 32 --seeds 0 --dev-rows 64 --no-write`.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import platform
import re
import shutil
import subprocess
import tempfile
import time
from typing import Any, Callable

from benchmarks.common.finetune_tasks import METRICS, REPO, TASK_NAMES, build_tasks, read_json
from benchmarks.common.seed_spread import quality_table, wall_time_table

_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_FIRST_STEP = re.compile(r"^\s*1/(\d+|Unknown)\b")
_LAST_STEP = re.compile(r"^\s*(\d+)/\1\b")
_KBERT_SPEED = re.compile(r"\(([0-9.]+) training examples/s")
_KBERT_PHASES = re.compile(r"^phases \(s\): (.+)$")
PHASES = ("load", "first_step", "train", "evaluate", "save")


def run_timed(command: list[str], log: pathlib.Path) -> dict[str, Any]:
    """Runs `command`, timestamps its output lines into `log`; returns the wall seconds, the seconds to
    the first optimizer step and to the end of training, and the output lines.

    The first step is the first progress line `1/STEPS`, the end of training the last `STEPS/STEPS` (Keras'
    bar and the reference print both). Raises RuntimeError with the output's tail when the command fails.
    """
    env = dict(os.environ, PYTHONUNBUFFERED="1", TF_CPP_MIN_LOG_LEVEL="2")
    began = time.perf_counter()
    first_step, train_end, lines = None, None, []
    with subprocess.Popen(command, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True, errors="replace") as process, open(log, "w", encoding="utf-8") as sink:
        for line in process.stdout:
            now = time.perf_counter() - began
            text = _ANSI.sub("", line.rstrip("\n"))
            sink.write(f"{now:9.3f} {text}\n")
            lines.append(text)
            if first_step is None and _FIRST_STEP.match(text):
                first_step = now
            if _LAST_STEP.match(text):
                train_end = now
    wall = time.perf_counter() - began
    if process.returncode:
        raise RuntimeError(f"{' '.join(command)} failed ({process.returncode}):\n" + "\n".join(lines[-30:]))
    return {"wall_seconds": wall, "first_step_seconds": first_step, "train_end_seconds": train_end, "output": lines}


def run_all(args: argparse.Namespace, work: pathlib.Path, runs: list[dict[str, Any]], save: Callable[[], None]) -> None:
    """Every task x size x seed x framework not already in `runs`; appends each finished run and saves."""
    done = {(r["task"], r["size"], r["seed"], r["framework"]) for r in runs}
    for key, (task, sizes) in build_tasks(args, work).items():
        for size in sizes:
            for seed in args.seeds:
                out = work / f"{key}-{size}-seed{seed}"
                commands = {framework: command for framework, command in task.commands(size, seed, out, args).items()
                            if framework in args.frameworks and (task.name, size, seed, framework) not in done}
                if not commands:
                    continue
                out.mkdir(parents=True, exist_ok=True)
                examples = task.prepare(size, out) if task.prepare else min(size, task.available)
                for framework, command in commands.items():
                    timed = run_timed(command, out / f"{framework}.log")
                    score, metrics = task.score(framework, out, size)
                    own_speed = _program_speed(framework, out, timed["output"])
                    runs.append({
                        "task": task.name, "metric": METRICS[task.name], "size": size, "seed": seed,
                        "framework": framework, "score": score, "metrics": metrics, "train_examples": examples,
                        "dev_examples": task.dev_rows, "wall_seconds": timed["wall_seconds"],
                        "first_step_seconds": timed["first_step_seconds"],
                        "train_end_seconds": timed["train_end_seconds"],
                        "phase_seconds": kbert_phases(timed["output"]) if framework == "kbert" else None,
                        "train_examples_per_second": own_speed,
                        "whole_run_examples_per_second": examples * args.epochs / timed["wall_seconds"],
                        "command": " ".join(command),
                    })
                    print(f"{task.name} size {size} seed {seed} {framework}: {score:.2f} "
                          f"({timed['wall_seconds']:.1f} s)", flush=True)
                    save()
                if not args.keep_models:
                    for path in out.iterdir():
                        if path.is_dir():
                            shutil.rmtree(path)


def kbert_phases(output: list[str]) -> dict[str, float] | None:
    """The seconds of each phase from kbert's last `phases (s): load 2.1, first step 4.3, ...` line."""
    found = [m.group(1) for line in output for m in [_KBERT_PHASES.match(line)] if m]
    if not found:
        return None
    parts = (part.rsplit(" ", 1) for part in found[-1].split(", "))
    return {name.replace(" ", "_"): float(value) for name, value in parts}


def phase_table(runs: list[dict[str, Any]]) -> str:
    """Markdown: kbert's own phases per task and size (mean over seeds), and the rest of the process
    (wall time less the phases: imports, argument parsing, reading the rows, the interpreter's exit)."""
    lines = ["| task | train size | " + " | ".join(p.replace("_", " ") + " s" for p in PHASES)
             + " | rest of the process s | wall s |", "|---|---|" + "---:|" * (len(PHASES) + 2)]
    groups: dict[tuple[str, int], list[dict[str, Any]]] = {}
    for run in runs:
        if run["framework"] == "kbert" and run.get("phase_seconds"):
            groups.setdefault((run["task"], run["size"]), []).append(run)
    for (task, size), items in groups.items():
        mean = {p: sum(r["phase_seconds"].get(p, 0.0) for r in items) / len(items) for p in PHASES}
        wall = sum(r["wall_seconds"] for r in items) / len(items)
        lines.append(f"| {task} | {size} | " + " | ".join(f"{mean[p]:.1f}" for p in PHASES)
                     + f" | {wall - sum(mean.values()):.1f} | {wall:.1f} |")
    return "\n".join(lines) + "\n"


def _program_speed(framework: str, out: pathlib.Path, output: list[str]) -> float | None:
    """Training examples/s as the program reports it (kbert: fit time; reference: after the first step)."""
    if framework == "reference":
        return read_json(out / "reference" / "metrics.json")["steady_examples_per_second"]
    found = [m for line in output for m in _KBERT_SPEED.findall(line)]
    return float(found[-1]) if found else None


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", default="sst2,pairs,conll", help="comma list of sst2, pairs, conll, squad")
    parser.add_argument("--frameworks", default="kbert,reference", help="kbert, reference (or hf)")
    parser.add_argument("--sizes", "--sst2-train-rows", nargs="+", type=int, default=[500, 1000, 2000, 4000, 8000],
                        help="SST-2 training rows (and the pair task's, without --pair-sizes)")
    parser.add_argument("--pair-sizes", nargs="+", type=int, help="pair-task training pairs (default: --sizes)")
    parser.add_argument("--conll-sizes", "--conll-train-sentences", nargs="+", type=int, default=[1000, 5000])
    parser.add_argument("--squad-sizes", "--squad-train-questions", nargs="+", type=int, default=[1500],
                        help="training questions from articles 0-39")
    parser.add_argument("--seeds", "--seed", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--dev-rows", type=int, help="evaluate every task on its first N examples (smoke tests)")
    parser.add_argument("--sst2-dev-rows", type=int, help="default: the full dev set (872)")
    parser.add_argument("--pair-dev-rows", type=int, default=1000, help="of 1573 pairs from articles 40-47")
    parser.add_argument("--conll-test-sentences", type=int, help="default: all 3453")
    parser.add_argument("--squad-eval-questions", type=int, default=600, help="from articles 40-47")
    parser.add_argument("--sst2-sequence-length", type=int, default=64)
    parser.add_argument("--pair-sequence-length", type=int, default=128)
    parser.add_argument("--conll-sequence-length", type=int, default=128)
    parser.add_argument("--squad-sequence-length", type=int, default=256)
    parser.add_argument("--doc-stride", type=int, default=128)
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--learning-rate", type=float, default=5e-5)
    parser.add_argument("--warmup-ratio", type=float, default=0.1)
    parser.add_argument("--init", help="pretrained checkpoint directory (default: all-MiniLM-L6-v2)")
    parser.add_argument("--mixed-precision", default="none", help="`kbert finetune --mixed-precision` (default "
                        "none: float32 like the reference, which stays float32)")
    parser.add_argument("--goal", type=float, default=1.3,
                        help="wall-time goal, reference / kbert (issue 45: 1.0 at 500 SST-2 rows, 1.5 at 2,000)")
    parser.add_argument("--wall-time", action="store_true",
                        help="write the wall-time table (whole process, reference / kbert) instead of quality")
    parser.add_argument("--work-dir", help="where runs write (default: a new temporary directory)")
    parser.add_argument("--json", help="every run as JSON (default: WORK_DIR/runs.json)")
    parser.add_argument("--resume", action="store_true", help="keep the runs already in --json, run the rest")
    parser.add_argument("--keep-models", action="store_true", help="keep each run's model directories")
    parser.add_argument("--section", help="BENCHMARKS.md section (default finetune_quality, or "
                        "finetune_wall_time with --wall-time)")
    parser.add_argument("--no-write", action="store_true", help="print the table, leave BENCHMARKS.md alone")
    args = parser.parse_args(argv)
    args.frameworks = [{"hf": "reference"}.get(f, f) for f in args.frameworks.split(",")]
    for flag, given, known in (("--tasks", args.tasks.split(","), TASK_NAMES),
                               ("--frameworks", args.frameworks, ("kbert", "reference"))):
        unknown = [name for name in given if name not in known]
        if unknown:
            parser.error(f"{flag}: unknown {unknown}; known: {', '.join(known)}")
    for flag in ("sizes", "pair_sizes", "conll_sizes", "squad_sizes"):
        if min(getattr(args, flag) or [1]) < 1:
            parser.error(f"--{flag.replace('_', '-')} are numbers of training examples (1 or more), "
                         f"got {getattr(args, flag)}")
    args.section = args.section or ("finetune_wall_time" if args.wall_time else "finetune_quality")
    if args.init is None:
        import kbert.pretrained

        args.init = kbert.pretrained.minilm_path()
    return args


def report(args: argparse.Namespace, runs: list[dict[str, Any]]) -> str:
    """The markdown section: command, machine, recipe and the quality or wall-time table."""
    from benchmarks.common.report import command_line

    versions = {}
    for module in ("tensorflow", "keras", "torch", "transformers"):
        try:
            versions[module] = __import__(module).__version__
        except ImportError:
            versions[module] = "-"
    title = ("Fine-tuning wall time, whole process" if args.wall_time else "Fine-tuning quality over seeds")
    lines = [
        f"## {title}: `kbert finetune` vs. transformers + PyTorch (all-MiniLM-L6-v2)",
        "",
        f"Command: `{command_line()}`  ",
        f"Machine: {platform.processor() or platform.machine()}, {os.cpu_count()} CPU cores, no GPU, load average "
        f"{os.getloadavg()[0]:.2f} at the end; TF {versions['tensorflow']}, Keras {versions['keras']}, "
        f"torch {versions['torch']}, transformers {versions['transformers']}.  ",
        f"Recipe (both, each run its own process): {args.epochs} epoch(s), batch {args.batch_size}, peak lr "
        f"{args.learning_rate:g}, linear warmup {args.warmup_ratio:.0%} then linear decay, AdamW eps 1e-6, "
        "wd 0.01 (not on bias/LayerNorm), clip 1.0, dropout 0.1, dynamic padding; sequence length SST-2 "
        f"{args.sst2_sequence_length}, pairs {args.pair_sequence_length}, CoNLL {args.conll_sequence_length}, "
        f"SQuAD {args.squad_sequence_length} (stride {args.doc_stride}). Seeds {' '.join(map(str, args.seeds))}.",
        "",
    ]
    if args.wall_time:
        lines += [
            "Wall time = the whole process (start to exit: imports, load, tokenization, tracing, training, "
            "saving, evaluation); mean over seeds. Whole-run ex/s = training examples (QA: windows) / wall "
            "time; training ex/s = as each program reports it (kbert: `fit` time; reference: after step 1). "
            "Phases from the output's timestamps: start → first progress line `1/N` (imports, load, "
            "tokenization, first step with tracing) / → last `N/N` (training) / → exit (saving, evaluation). "
            f"Goal: reference / kbert >= {args.goal:g}.",
            "",
            wall_time_table(runs, goal=args.goal),
            "kbert's phases as it prints them (`phases (s): ...`, mean over seeds; save runs before "
            "evaluate):",
            "",
            phase_table(runs),
            "Scores of the same runs (points; no accuracy traded for speed):",
            "",
            quality_table(runs, METRICS),
        ]
    else:
        lines += [
            "Scores in points (accuracy or F1 x 100); mean ± sample std (min–max) over seeds. Goal: kbert's "
            "mean >= the reference's - 1.0 point, kbert's std <= 1.5 x the reference's.",
            "",
            quality_table(runs, METRICS),
        ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # before the lazy TF imports (SQuAD windows)
    args = parse_args(argv)
    work = pathlib.Path(args.work_dir or tempfile.mkdtemp(prefix="kbert-finetune-quality-"))
    work.mkdir(parents=True, exist_ok=True)
    json_path = pathlib.Path(args.json) if args.json else work / "runs.json"
    runs = read_json(json_path) if args.resume and json_path.exists() else []

    def save() -> None:
        json_path.write_text(json.dumps(runs, indent=1) + "\n", encoding="utf-8")

    print(f"runs: {json_path}", flush=True)
    run_all(args, work, runs, save)
    text = report(args, runs)
    print(text)
    if not args.no_write:
        from benchmarks.common.report import write_section

        write_section(args.section, text)


if __name__ == "__main__":
    main()
