"""Pretrained against random initialisation as the labelled data grows: the seeds' curve on real tasks.

`benchmarks/studies/pretrain_quality.py` compares the two starts at one training size (its first 20,000 rows).
Pretraining is said to matter most when labels are few; this fine-tunes a pretrain_quality run's model and
the same architecture from random weights, with that benchmark's recipe and seeds, on the first N rows of
each downstream task for several N, and writes mean and spread per size. Fine-tuning runs go to
RUN/labelled_curve/N/TASK/; `--resume` keeps the finished ones.

    python -m benchmarks.studies.labelled_data_curve --run runs/q_en --sizes 1000 2000 5000 20000 --out curve_en.json
    python -m benchmarks.studies.labelled_data_curve --run runs/q_zh --lang zh --tasks book_review --sizes 1000 5000 \\
        --out curve_zh.json
    python -m benchmarks.studies.labelled_data_curve --run runs/q_en --downstream train.tsv dev.tsv --text-column text \\
        --label-column label --sizes 500 2000 --out curve_mine.json
"""

from __future__ import annotations

import argparse
import json
import pathlib
import statistics
import sys

REPO = pathlib.Path(__file__).resolve().parents[2]

from benchmarks.common.downstream import (
    DOWNSTREAM, FINETUNE_EPOCHS, FINETUNE_LEARNING_RATE, check_downstream, downstream_tasks, finetune_runs)


def markdown(curve: dict) -> str:
    """One table a task: mean ± spread (population standard deviation) of each start, per size."""
    lines = []
    for name, task in curve["tasks"].items():
        lines += [f"{name} ({task['metric']}, {len(curve['seeds'])} seeds):", "",
                  "| training rows | pretrained | random init | difference |", "|---:|---|---|---:|"]
        for size, scores in task["by_size"].items():
            if "error" in scores:
                lines.append(f"| {int(size):,} | {scores['error']} | | |")
                continue
            cells = [f"{statistics.mean(s) * 100:.2f} ± {statistics.pstdev(s) * 100:.2f}"
                     for s in (scores["pretrained"], scores["random"])]
            lines.append(f"| {int(size):,} | {cells[0]} | {cells[1]} | {scores['difference'] * 100:+.2f} |")
        lines.append("")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run", required=True, help="a pretrain_quality output directory (model/, vocab.txt)")
    parser.add_argument("--lang", choices=sorted(DOWNSTREAM), default="en")
    parser.add_argument("--tasks", nargs="+", help="downstream tasks by name (default: the language's classifiers)")
    parser.add_argument("--downstream", nargs=2, metavar=("TRAIN", "VALIDATION"),
                        help="one labelled classification TSV pair instead of --tasks")
    parser.add_argument("--text-column", default="sentence")
    parser.add_argument("--label-column", default="label")
    parser.add_argument("--sizes", nargs="+", type=int, default=[1000, 2000, 5000, 20000])
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--finetune-epochs", type=int, default=FINETUNE_EPOCHS)
    parser.add_argument("--finetune-learning-rate", type=float, default=FINETUNE_LEARNING_RATE)
    parser.add_argument("--resume", action="store_true", help="keep finished fine-tuning runs")
    parser.add_argument("--out", required=True, help="results JSON")
    args = parser.parse_args(argv)
    run = pathlib.Path(args.run)
    if not (run / "model").is_dir() or not (run / "vocab.txt").is_file():
        parser.error(f"{run} has no model/ and vocab.txt: pass a benchmarks/studies/pretrain_quality.py output directory")
    # The fields of pretrain_quality's arguments that its fine-tuning stage reads.
    settings = argparse.Namespace(downstream=args.downstream, tag=False, text_column=args.text_column,
                                  label_column=args.label_column, lang=args.lang, seeds=args.seeds,
                                  resume=args.resume, finetune_epochs=args.finetune_epochs,
                                  finetune_learning_rate=args.finetune_learning_rate)
    known = downstream_tasks(settings)
    names = args.tasks or [name for name, task in known.items() if task[0] == "classify"]
    unknown = sorted(set(names) - set(known))
    if unknown:
        parser.error(f"unknown task(s) {unknown} for --lang {args.lang}; known: {sorted(known)}")
    tasks = {name: known[name] for name in names}
    if min(args.sizes) < 1:
        parser.error(f"--sizes are numbers of training rows (1 or more), got {args.sizes}")
    try:  # the fewest rows name the fewest labels: if the validation labels pass there, they pass at every size
        check_downstream(tasks, min(args.sizes))
    except ValueError as error:
        parser.error(str(error))
    curve = {"run": str(run), "lang": args.lang, "seeds": args.seeds, "epochs": args.finetune_epochs,
             "learning_rate": args.finetune_learning_rate, "sizes": args.sizes,
             "tasks": {name: {"metric": task[3], "by_size": {}} for name, task in tasks.items()}}
    for size in args.sizes:
        settings.max_train_examples = size
        results, _ = finetune_runs(settings, run, tasks, run / "labelled_curve" / str(size))
        for name, result in results.items():
            curve["tasks"][name]["by_size"][str(size)] = {
                key: result[key] for key in ("pretrained", "random", "difference", "error") if key in result}
    pathlib.Path(args.out).write_text(json.dumps(curve, indent=2) + "\n", encoding="utf-8")
    print(markdown(curve))
    return 1 if any("error" in s for t in curve["tasks"].values() for s in t["by_size"].values()) else 0


if __name__ == "__main__":
    sys.exit(main())
