"""`kbert finetune TASK`: fine-tune a pretrained (or random) BERT and write a model directory.

The common flags are `FinetuneConfig`'s fields; each task's own flags are its settings (the fields of its
`kbert.tasks` class), so a new task brings its flags with it. TASK is a command of
`kbert.tasks.registry.COMMANDS`.
"""

from __future__ import annotations

import argparse
import json

from kbert.cli.flags import add_dataclass_flags, cli_fields, collect
from kbert.cli.main import UsageError

REQUIRED = ("train", "out")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Adds one subcommand per task: `FinetuneConfig`'s flags and the task's settings."""
    from kbert.tasks.registry import COMMANDS
    from kbert.training.finetune_config import FinetuneConfig

    tasks = parser.add_subparsers(dest="task", required=True, metavar="TASK")
    for command, task in COMMANDS.items():
        sub = tasks.add_parser(command, help=task.summary, description=task.summary)
        own = [field.name for field, _ in cli_fields(task)]  # a task's setting wins over a shared one
        add_dataclass_flags(sub, FinetuneConfig, required=REQUIRED, skip=own)
        add_dataclass_flags(sub, task)


def task_from_args(args: argparse.Namespace):
    """The `kbert.tasks.Task` that parsed `kbert finetune TASK ...` arguments describe."""
    from kbert.tasks.registry import COMMANDS, get_task

    settings = COMMANDS[args.task]
    return get_task(settings.name, **collect(args, settings))


def run(args: argparse.Namespace) -> int:
    from kbert.tasks.registry import COMMANDS
    from kbert.training.finetune import FinetuneConfig, finetune, format_phases

    if args.init is None and args.vocab is None:
        raise UsageError("without --init, --vocab is required (random weights need a vocabulary)")
    task = task_from_args(args)
    own = [field.name for field, _ in cli_fields(COMMANDS[args.task])]
    config = FinetuneConfig(**collect(args, FinetuneConfig, skip=own))
    result = finetune(task, config)
    print(json.dumps(result["metrics"], indent=2))
    print(f"wrote {result['model_dir']} ({result['train_examples_per_second']:.1f} training examples/s, "
          f"{result['replicas']} replica(s))")
    print(format_phases(result["phase_seconds"]))
    return 0
