"""Distillation on SST-2 (dev accuracy) or CoNLL-2003 (`--task conll`: dev entity F1): a 3-layer student of a
fine-tuned all-MiniLM-L6-v2, against the same student trained on the labels alone, over paired seeds.

Every run is a `kbert` process (`kbert finetune classify|tag`, `kbert distill classify|tag`), as a user would
call it:

- the teacher: all-MiniLM-L6-v2 fine-tuned on the first `--labelled` training rows (sentences for CoNLL; seed 0);
- "distilled": the student of layers 0, 2, 4 (`--student-layers 3`) on the same labelled rows at alpha 0.5, plus
  the next `--unlabelled` rows without their labels, which the teacher labels on the fly (SST-2's sentences as a
  .txt file; CoNLL's as a CoNLL file whose tags `kbert distill tag --unlabelled` does not read);
- "distilled, labelled rows only": the same without the unlabelled texts (when `--variants` names it);
- "distilled, + hidden and attention": "distilled" with TinyBERT's hidden-state and MiniLM's attention losses at
  weight 1 each (`--hidden-weight 1 --attention-weight 1`, when `--variants` names it);
- "labels only": the same student at alpha 0 on the labelled rows (fine-tuning the student without a teacher).

Each student runs at every seed; the table shows each variant's mean ± std (min–max) of the dev score, its share
of the teacher's, and the paired difference to "labels only" with its 95% t-interval over the seeds
(`benchmarks.common.seed_spread.paired_interval`). Runs are saved to the JSON as they finish; `--resume` skips
those already there (give `--work` too, so that the teacher is kept).

    python -m benchmarks.studies.distillation --labelled 4000 --unlabelled 8000 --epochs 2 --seeds 0 1 2 \
        --work /tmp/distill --json distill.json --resume
    python -m benchmarks.studies.distillation --task conll --labelled 5000 --unlabelled 9000 --epochs 2 \
        --learning-rate 1e-4 --sequence-length 128 --seeds 0 1 2 --work /tmp/distill_conll --json conll.json
Smoke test: `--labelled 64 --unlabelled 64 --dev-rows 64 --seeds 0 1 --epochs 1` (with or without `--task conll`).
"""

from __future__ import annotations

import argparse
import csv
import json
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any

from benchmarks.common.finetune_tasks import DATA, REPO, kbert_command, read_json
from benchmarks.common.report import host_line, load_average
from benchmarks.common.seed_spread import paired_interval

SST2 = DATA / "sst2"
CONLL = DATA / "conll2003"
BASELINE = "labels only"
VARIANTS = {"distilled": ["--alpha", "0.5", "--unlabelled", "{unlabelled}"],
            "distilled, labelled rows only": ["--alpha", "0.5"],
            "distilled, + hidden and attention": ["--alpha", "0.5", "--unlabelled", "{unlabelled}",
                                                  "--hidden-weight", "1", "--attention-weight", "1"],
            BASELINE: ["--alpha", "0"]}


def write_splits(task: str, work: pathlib.Path, labelled: int, unlabelled: int) -> tuple[pathlib.Path, pathlib.Path]:
    """The first `labelled` training rows and the next `unlabelled` ones: SST-2's as a TSV and a .txt file of
    sentences (one text a line, no labels); CoNLL-2003's sentences as two CoNLL files."""
    if task == "conll":
        return write_conll_splits(work, labelled, unlabelled)
    with open(SST2 / "train.tsv", encoding="utf-8", newline="") as source:
        rows = list(csv.DictReader(source, delimiter="\t", quoting=csv.QUOTE_NONE))
    if labelled + unlabelled > len(rows):
        raise ValueError(f"SST-2 has {len(rows)} training rows, fewer than {labelled} + {unlabelled}")
    train = work / "train.tsv"
    train.write_text("sentence\tlabel\n" + "".join(f"{r['sentence']}\t{r['label']}\n" for r in rows[:labelled]),
                     encoding="utf-8")
    texts = work / "unlabelled.txt"
    texts.write_text("".join(r["sentence"].strip() + "\n" for r in rows[labelled:labelled + unlabelled]),
                     encoding="utf-8")
    return train, texts


def write_conll_splits(work: pathlib.Path, labelled: int, unlabelled: int) -> tuple[pathlib.Path, pathlib.Path]:
    """CoNLL-2003's training sentences (each its block of lines, `-DOCSTART-` dropped) split as `write_splits`."""
    blocks = [block for block in (CONLL / "train.txt").read_text(encoding="utf-8").split("\n\n")
              if block.strip() and not block.startswith("-DOCSTART-")]
    if labelled + unlabelled > len(blocks):
        raise ValueError(f"CoNLL-2003 has {len(blocks)} training sentences, fewer than {labelled} + {unlabelled}")
    train, texts = work / "train.txt", work / "unlabelled.txt"
    train.write_text("\n\n".join(b.strip("\n") for b in blocks[:labelled]) + "\n", encoding="utf-8")
    texts.write_text("\n\n".join(b.strip("\n") for b in blocks[labelled:labelled + unlabelled]) + "\n",
                     encoding="utf-8")
    return train, texts


def run(command: list[str], log: pathlib.Path) -> float:
    """Runs a kbert command with its output in `log`; returns its wall seconds (raises with the log's tail)."""
    began = time.perf_counter()
    with open(log, "w", encoding="utf-8") as sink:
        code = subprocess.call(command, cwd=REPO, stdout=sink, stderr=subprocess.STDOUT)
    if code:
        tail = "\n".join(log.read_text(encoding="utf-8", errors="replace").splitlines()[-20:])
        raise RuntimeError(f"{' '.join(command)} exited {code}:\n{tail}")
    return time.perf_counter() - began


TASKS = {"sst2": ("classify", "accuracy", "dev accuracy"), "conll": ("tag", "f1", "dev entity F1")}


def score(task: str, out: pathlib.Path) -> float:
    """The run's dev score in points, from its metrics.json."""
    return 100 * read_json(out / "metrics.json")[TASKS[task][1]]


def common_flags(args: argparse.Namespace, train: pathlib.Path, seed: int) -> list[str]:
    data = (["--validation", str(CONLL / "valid.txt")] if args.task == "conll" else
            ["--validation", str(SST2 / "dev.tsv"), "--text-column", "sentence", "--label-column", "label"])
    flags = ["--train", str(train), *data, "--sequence-length", str(args.sequence_length), "--epochs", str(args.epochs),
             "--batch-size", str(args.batch_size), "--learning-rate", str(args.learning_rate), "--seed", str(seed)]
    return flags + (["--max-validation-examples", str(args.dev_rows)] if args.dev_rows else [])


def run_all(args: argparse.Namespace, work: pathlib.Path, runs: list[dict[str, Any]], save) -> None:
    """The teacher once, then every variant at every seed, each saved at once."""
    train, texts = write_splits(args.task, work, args.labelled, args.unlabelled)
    command = TASKS[args.task][0]
    done = {(r["variant"], r["seed"]) for r in runs}
    teacher = work / "teacher"
    if ("teacher", 0) not in done or not (teacher / "model.keras").exists():
        seconds = run([*kbert_command(), "finetune", command, "--init", str(args.init),
                       *common_flags(args, train, 0), "--out", str(teacher)], work / "teacher.log")
        runs[:] = [r for r in runs if r["variant"] != "teacher"]
        runs.append({"variant": "teacher", "seed": 0, "seconds": seconds,
                     TASKS[args.task][1]: score(args.task, teacher)})
        save()
        done = {(r["variant"], r["seed"]) for r in runs}
    for seed in args.seeds:
        for variant in args.variants:
            if (variant, seed) in done:
                continue
            out = work / f"{variant.replace(' ', '_').replace(',', '')}-{seed}"
            extra = [flag.format(unlabelled=texts) for flag in VARIANTS[variant]]
            seconds = run([*kbert_command(), "distill", command, "--teacher", str(teacher),
                           "--student-layers", str(args.student_layers), *extra, *common_flags(args, train, seed),
                           "--out", str(out)], work / f"{out.name}.log")
            runs.append({"variant": variant, "seed": seed, "seconds": seconds,
                         TASKS[args.task][1]: score(args.task, out)})
            save()


def report(args: argparse.Namespace, runs: list[dict[str, Any]]) -> str:
    """Markdown: the teacher, each variant's spread over seeds and its paired difference to labels only."""
    metric = TASKS[args.task][1]
    teacher = next(r[metric] for r in runs if r["variant"] == "teacher")
    by_variant: dict[str, dict[int, float]] = {}
    for r in runs:
        if r["variant"] != "teacher":
            by_variant.setdefault(r["variant"], {})[r["seed"]] = r[metric]
    lines = [f"| model | seeds | {TASKS[args.task][2]}, mean ± std (min–max) | of the teacher | minus labels only, "
             "mean [95% interval] | minutes a run |", "|---|---:|---|---:|---|---:|",
             f"| teacher (6 layers) | 1 | {teacher:.2f} | 100% | | "
             f"{next(r['seconds'] for r in runs if r['variant'] == 'teacher') / 60:.1f} |"]
    baseline = by_variant.get(BASELINE, {})
    for variant, scores in by_variant.items():
        values = [scores[s] for s in sorted(scores)]
        std = statistics.stdev(values) if len(values) > 1 else 0.0
        paired = sorted(set(scores) & set(baseline))
        difference = ""
        if variant != BASELINE and len(paired) > 1:
            interval = paired_interval([scores[s] for s in paired], [baseline[s] for s in paired])
            difference = f"{interval['mean']:+.2f} [{interval['low']:+.2f}, {interval['high']:+.2f}]"
        minutes = statistics.fmean(r["seconds"] for r in runs if r["variant"] == variant) / 60
        lines.append(f"| {variant} (3 layers) | {len(values)} | {statistics.fmean(values):.2f} ± {std:.2f} "
                     f"({min(values):.2f}–{max(values):.2f}) | {100 * statistics.fmean(values) / teacher:.1f}% | "
                     f"{difference} | {minutes:.1f} |")
    data = "SST-2" if args.task == "sst2" else "CoNLL-2003"
    setting = (f"{data}: {args.labelled} labelled rows, {args.unlabelled} unlabelled, dev "
               f"{args.dev_rows or 'all'}; sequence length {args.sequence_length}, {args.epochs} epoch(s), batch "
               f"{args.batch_size}, learning rate {args.learning_rate}.\nHost: {host_line()}; load average at the end "
               f"{load_average()}.")
    return setting + "\n\n" + "\n".join(lines)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--task", choices=list(TASKS), default="sst2")
    parser.add_argument("--init", help="the teacher's pretrained checkpoint (default: all-MiniLM-L6-v2)")
    parser.add_argument("--labelled", type=int, default=4000, help="labelled training rows (the first ones)")
    parser.add_argument("--unlabelled", type=int, default=16000, help="the next rows' sentences, labels dropped")
    parser.add_argument("--dev-rows", type=int, help="evaluate on the first N dev rows (default: all)")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--variants", nargs="+", default=["distilled", BASELINE], choices=list(VARIANTS))
    parser.add_argument("--student-layers", type=int, default=3)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--learning-rate", type=float, default=5e-5)
    parser.add_argument("--sequence-length", type=int, default=64)
    parser.add_argument("--work", type=pathlib.Path, help="directory for the runs (default: a temporary one)")
    parser.add_argument("--json", type=pathlib.Path, help="save the runs here, each as it finishes")
    parser.add_argument("--resume", action="store_true", help="skip the runs already in --json")
    args = parser.parse_args(argv)
    if args.init is None:
        import kbert.pretrained

        args.init = kbert.pretrained.minilm_path()
    return args


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    data = CONLL / "train.txt" if args.task == "conll" else SST2 / "train.tsv"
    if not data.exists():
        sys.exit(f"{data} not found (see ../shared/data/README)")
    runs: list[dict[str, Any]] = read_json(args.json) if args.resume and args.json and args.json.exists() else []

    def save() -> None:
        if args.json:
            args.json.write_text(json.dumps(runs, indent=1), encoding="utf-8")

    with tempfile.TemporaryDirectory() as scratch:
        work = args.work or pathlib.Path(scratch)
        work.mkdir(parents=True, exist_ok=True)
        run_all(args, work, runs, save)
    print(report(args, runs))


if __name__ == "__main__":
    main()
