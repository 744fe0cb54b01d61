"""Fine-tuning downstream tasks from a pretrained model and from a random init, through `kbert finetune`:
the tasks of each language, their checks before any work, and the runs. Shared by the pretraining studies
(`pretrain_quality`, `labelled_data_curve`).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import pathlib
import statistics
import sys

from benchmarks.common.finetune_tasks import DATA

# The fine-tuning recipe of every downstream run, both starts (a task's flags may set its own epochs).
FINETUNE_EPOCHS, FINETUNE_LEARNING_RATE = 3, 3e-4
# name: (command, train, validation, metric key in metrics.json, extra flags)
DOWNSTREAM = {
    "en": {"sst2": ("classify", DATA / "sst2/train.tsv", DATA / "sst2/dev.tsv", "accuracy",
                    ["--text-column", "sentence", "--label-column", "label", "--sequence-length", "64"]),
           "conll2003": ("tag", DATA / "conll2003/train.txt", DATA / "conll2003/test.txt", "f1",
                         ["--sequence-length", "128"])},
    "zh": {"book_review": ("classify", DATA / "zh_book_review/train.tsv", DATA / "zh_book_review/dev.tsv",
                           "accuracy", ["--text-column", "text_a", "--label-column", "label",
                                        "--sequence-length", "128"]),
           # 2,318 training sentences: 3 epochs are 217 updates, which train neither start (entity F1
           # under 10 for both); 10 epochs, 725 updates, fewer than half of what the other tasks get.
           "msra_ner": ("tag", DATA / "zh_msra_ner/dev.tsv", DATA / "zh_msra_ner/test.tsv", "f1",
                        ["--tag-format", "spaces", "--sequence-length", "128", "--epochs", "10"])},
}


def add_downstream_arguments(parser: argparse.ArgumentParser, lang: tuple[str, ...] = ("en", "zh")) -> None:
    """The fine-tuning flags of a study that fine-tunes pretrained models on the downstream tasks
    (`downstream_tasks`, `finetune_runs` read them)."""
    parser.add_argument("--lang", choices=lang, default="en")
    parser.add_argument("--downstream", nargs=2, metavar=("TRAIN", "VALIDATION"),
                        help="one labelled task instead of the language's defaults")
    parser.add_argument("--text-column", default="sentence")
    parser.add_argument("--label-column", default="label")
    parser.add_argument("--tag", action="store_true", help="--downstream is a tagging task (kbert finetune tag)")
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--finetune-epochs", type=int, default=FINETUNE_EPOCHS)
    parser.add_argument("--finetune-learning-rate", type=float, default=FINETUNE_LEARNING_RATE)
    parser.add_argument("--max-train-examples", type=int, default=20000, help="0: all")
    parser.add_argument("--resume", action="store_true", help="keep finished fine-tuning runs")


def downstream_tasks(args: argparse.Namespace) -> dict:
    """`--downstream` as one task named after its folder, else the language's tasks (as in DOWNSTREAM)."""
    if not args.downstream:
        return DOWNSTREAM[args.lang]
    train, validation = args.downstream
    kind = "tag" if args.tag else "classify"
    flags = [] if args.tag else ["--text-column", args.text_column, "--label-column", args.label_column]
    return {pathlib.Path(train).parent.name or "downstream":
            (kind, train, validation, "f1" if args.tag else "accuracy", flags)}


def check_downstream(tasks: dict, max_train_examples: int | None = None) -> None:
    """Reads each task's files as its `kbert finetune` run will (flags, first rows, labels).

    So that a wrong path, column or label stops the benchmark at once, not after the hour of pretraining.

    Raises:
        ValueError: naming the task and what its files lack.
    """
    from kbert.tasks.registry import COMMANDS, get_task

    for name, (command, train, validation, _, flags) in tasks.items():
        # The task the flags describe: a `--a-b VALUE` pair naming a setting `a_b` of the command's task
        # (the others are fine-tuning flags, such as --epochs).
        own = {field.name for field in dataclasses.fields(COMMANDS[command])}
        given = {flag[2:].replace("-", "_"): value for flag, value in zip(flags[::2], flags[1::2])}
        task = get_task(COMMANDS[command].name, **{k: v for k, v in given.items() if k in own})
        try:
            examples = task.read_examples(train, max_train_examples or None, split="train")
            task = task.prepare(train, examples)
            task.check_labels(task.read_examples(validation, None, split="validation"))
        except (ValueError, OSError) as error:
            raise ValueError(f"downstream task {name}: {error}") from error


def finetune_runs(args: argparse.Namespace, work: pathlib.Path, tasks: dict | None = None,
                  runs: pathlib.Path | None = None, model: pathlib.Path | None = None,
                  inits: tuple[str, ...] = ("pretrained", "random")) -> tuple[dict, list[str]]:
    """Fine-tunes `work`'s model and a random init per task and seed, through the CLI, into `runs`/TASK/.

    `tasks` (default: `downstream_tasks(args)`) maps a name to (command, train, validation, metric, flags)
    as in DOWNSTREAM; `runs` defaults to `work`/finetune; `model` (default `work`/model) is the pretrained
    start; `inits` names the starts to run, "pretrained" and "random" (the model's architecture, fresh weights).
    """
    from kbert.cli.main import main

    runs = runs or work / "finetune"
    model = model or work / "model"
    tasks = downstream_tasks(args) if tasks is None else tasks
    results, commands = {}, []
    for name, (command, train, validation, metric, flags) in tasks.items():
        scores: dict[str, list] = {init: [] for init in inits}
        losses: dict[str, list] = {init: [] for init in inits}
        for init in inits:
            for seed in args.seeds:
                out = runs / name / f"{init}_{seed}"
                # the random start is the pretrained model's architecture (the recipe's), with fresh weights
                source = ["--init", str(model)] if init == "pretrained" else [
                    "--preset", str(model), "--vocab", str(work / "vocab.txt")]
                argv = ["finetune", command, *source, "--train", str(train), "--validation", str(validation),
                        *flags, *([] if "--epochs" in flags else ["--epochs", str(args.finetune_epochs)]),
                        "--batch-size", "32", "--mixed-precision", "none",  # float32, as recorded
                        "--learning-rate", str(args.finetune_learning_rate), "--seed", str(seed), "--verbose", "0",
                        "--out", str(out)]
                if args.max_train_examples:
                    argv += ["--max-train-examples", str(args.max_train_examples)]
                commands.append("kbert " + " ".join(argv))
                if args.resume and (out / "metrics.json").exists():
                    code = 0
                else:
                    try:
                        code = main(argv)
                    except SystemExit as error:  # argparse: a flag this checkout's CLI does not have
                        code = error.code
                if code != 0:
                    results[name] = {"metric": metric, "error": f"kbert {' '.join(argv[:2])} exited with {code}"}
                    print(f"{name}: {results[name]['error']}", file=sys.stderr)
                    break
                scores[init].append(json.loads((out / "metrics.json").read_text())[metric])
                if (out / "history.json").exists():  # training loss per epoch (kbert finetune writes it)
                    losses[init].append(json.loads((out / "history.json").read_text())["epochs"]["loss"])
            if name in results:
                break
        if name not in results:
            results[name] = {"metric": metric, **scores, "training_loss_by_epoch": losses}
            if set(inits) == {"pretrained", "random"}:
                results[name]["difference"] = statistics.mean(scores["pretrained"]) - statistics.mean(scores["random"])
    return results, commands
