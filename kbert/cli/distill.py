"""`kbert distill TASK --teacher DIR --out OUT`: train a smaller student to answer like a fine-tuned teacher.

The flags are `DistillConfig`'s fields, `FinetuneConfig`'s training fields (`kbert finetune`'s names, less those
that start a model: `NOT_DISTILLATION`) and the task's settings, which replace the teacher's saved ones (e.g.
the columns of other data). TASK is a command of `kbert.tasks.registry.COMMANDS`; the teacher must hold that
task. See docs/distillation.md.
"""

from __future__ import annotations

import argparse
import json

from kbert.cli.flags import add_dataclass_flags, cli_fields, collect


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Adds one subcommand per task: `DistillConfig`'s flags, the training flags and the task's settings."""
    from kbert.tasks.registry import COMMANDS
    from kbert.training.distill_config import NOT_DISTILLATION, DistillConfig
    from kbert.training.finetune_config import FinetuneConfig

    tasks = parser.add_subparsers(dest="task", required=True, metavar="TASK")
    for command, task in COMMANDS.items():
        sub = tasks.add_parser(command, help=task.summary, description=task.summary)
        own = [field.name for field, _ in cli_fields(task)]  # a task's setting wins over a shared one
        add_dataclass_flags(sub, DistillConfig, required=("teacher",))
        add_dataclass_flags(sub, FinetuneConfig, required=("out",), skip=[*own, *NOT_DISTILLATION])
        add_dataclass_flags(sub, task)


def run(args: argparse.Namespace) -> int:
    from kbert.tasks.registry import COMMANDS
    from kbert.training.distill import distill
    from kbert.training.distill_config import NOT_DISTILLATION, DistillConfig
    from kbert.training.finetune_config import FinetuneConfig

    settings = COMMANDS[args.task]
    own = [field.name for field, _ in cli_fields(settings)]
    training = FinetuneConfig(**{"train": None, **collect(args, FinetuneConfig, skip=[*own, *NOT_DISTILLATION])})
    result = distill(DistillConfig(**collect(args, DistillConfig)), training, task=settings.name,
                     **collect(args, settings))
    print(json.dumps({"student": result["metrics"], "teacher": result["teacher_metrics"]}, indent=2))
    record = result["distillation"]
    print(f"wrote {result['model_dir']}: a student of {record['student_layers']} layers ({record['student']}) "
          f"from a teacher of {record['teacher_layers']}")
    return 0
