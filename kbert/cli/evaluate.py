"""`kbert evaluate DIR --input SRC [task settings]`: score a fine-tuned model directory, print its metrics.

The flags are read in two steps: first this command's own (`--input`, `--batch-size` ...), then, once
DIR/task.json names the task, the task's settings (the flags of `kbert finetune TASK`), which override the
settings saved with the model for this evaluation.
"""

from __future__ import annotations

import argparse
import json

from kbert.cli.flags import add_alias, add_dataclass_flags, collect

PASS_UNKNOWN_ARGS = True  # `kbert.cli.main` hands the other flags over as `args.unknown_args`: task settings


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.epilog = ("The model's task settings are flags too (those of `kbert finetune TASK`), e.g. other "
                     "column names; they override the ones saved in DIR/task.json.")
    parser.add_argument("model_dir", metavar="DIR", help="model directory written by `kbert finetune`")
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--input", help="a file or tfds:NAME[:SPLIT], with the training columns")
    add_alias(group, "data", "input")
    parser.add_argument("--batch-size", type=int, default=64, help="prediction batch size (default: 64)")
    parser.add_argument("--max-examples", type=int, help="score only the first N examples")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")


def task_flags(task: type, argv: list[str], prog: str = "kbert evaluate") -> dict:
    """The settings of `task` (a task class or its settings) given as flags in `argv`.

    A setting's old flag names (`metadata["aliases"]` of its field) still work, with a deprecation warning.

    Args:
        task: type. A `kbert.tasks` task or settings dataclass; its fields are the flags.
        argv: list of str. The flags after this command's own.
        prog: str. The name in an error message.

    Returns:
        dict of the settings given (field name -> value).

    Raises:
        SystemExit: (status 2, from argparse, which prints the message) on a flag the task does not have.
    """
    parser = argparse.ArgumentParser(prog=prog)
    add_dataclass_flags(parser, task)
    return collect(parser.parse_args(argv), task)


def run(args: argparse.Namespace) -> int:
    from kbert.tasks.model_dir import read_task_info
    from kbert.tasks.registry import REGISTRY
    from kbert.training.finetune import evaluate_model

    name = read_task_info(args.model_dir)["task"]
    settings = task_flags(REGISTRY[name], getattr(args, "unknown_args", []), f"kbert evaluate (a {name} model)")
    metrics = evaluate_model(args.model_dir, args.input, batch_size=args.batch_size, max_examples=args.max_examples,
                             verbose=0 if args.quiet else 1, **settings)
    print(json.dumps(metrics, indent=2))
    return 0
