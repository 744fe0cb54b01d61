"""`kbert evaluate DIR --input SRC [task settings]`: score a fine-tuned model directory, print its metrics.

The flags are read in two steps: first this command's own (the fields of
`kbert.training.evaluate_config.EvaluateConfig`: `--input`, `--batch-size` ...), then, once
DIR/task.json names the task, the task's settings (the flags of `kbert finetune TASK`), which override the
settings saved with the model for this evaluation.
"""

from __future__ import annotations

import argparse
import json

from kbert.cli.flags import add_dataclass_flags, collect
from kbert.training.evaluate_config import EvaluateConfig

PASS_UNKNOWN_ARGS = True  # `kbert.cli.main` hands the other flags over as `args.unknown_args`: task settings


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Adds one flag per `EvaluateConfig` field; the task's settings are read by `task_flags` in `run`."""
    parser.epilog = ("The model's task settings are flags too (those of `kbert finetune TASK`), e.g. other "
                     "column names; they override the ones saved in DIR/task.json.")
    add_dataclass_flags(parser, EvaluateConfig, required=("input",))


def task_flags(task: type, argv: list[str], prog: str = "kbert evaluate") -> dict:
    """The settings of `task` (a task class or its settings) given as flags in `argv`.

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

    config = EvaluateConfig(**collect(args, EvaluateConfig))
    name = read_task_info(config.model_dir)["task"]
    settings = task_flags(REGISTRY[name], getattr(args, "unknown_args", []), f"kbert evaluate (a {name} model)")
    metrics = evaluate_model(config.model_dir, config.input, batch_size=config.batch_size,
                             max_examples=config.max_examples, verbose=config.verbose, **settings)
    print(json.dumps(metrics, indent=2))
    return 0
