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
from kbert.precision import MIXED_PRECISION_HELP, MIXED_PRECISIONS

HELP = {
    "init": "pretrained checkpoint directory (HF, Google or kbert); without it training starts from "
            "random weights of --preset",
    "preset": "encoder size when there is no --init: a preset name (default tiny) or a checkpoint "
              "directory, whose architecture is built with fresh weights",
    "vocab": "vocab.txt for training from random weights (required without --init)",
    "train": "training data: a file or tfds:NAME[:SPLIT]",
    "validation": "validation data: a file or tfds:NAME[:SPLIT]",
    "out": "model directory to write",
    "sequence_length": "packing length in tokens (the window length of a task that reads long texts in windows)",
    "epochs": "passes over the training data",
    "batch_size": "global batch size: the examples of one step summed over all replicas (default 32)",
    "learning_rate": "peak learning rate of AdamW",
    "weight_decay": "AdamW weight decay (not on LayerNorm and biases)",
    "strategy": "tf.distribute strategy: multi_worker reads TF_CONFIG",
    "mixed_precision": MIXED_PRECISION_HELP,
    "seed": "shuffling and initialisation seed",
    "warmup_ratio": "fraction of steps with linear warmup",
    "dropout": "dropout before the head",
    "feature_based": "freeze the encoder, train the head only",
    "max_train_examples": "use only the first N training examples",
    "max_validation_examples": "use only the first N validation examples",
    "group_by_length": "batch training examples of similar length together, so batches pad less; "
                       "with class labels, every batch keeps their shares in the data; "
                       "an epoch of up to 16 batches stays random "
                       "(default: on; --no-group-by-length for plain random batches)",
    "quiet": "no progress bars",
    "jit_compile": "compile the whole train step as one XLA program at fixed shapes (what a TPU runs): "
                   "batches padded to --sequence-length, the last short batch dropped, no length grouping; "
                   "an op XLA cannot compile is an error (always on with --strategy tpu)",
    "steps_per_execution": "train steps per call of the compiled loop (fewer host round trips, e.g. on a TPU)",
    "tpu": "with --strategy tpu: 'local' on a Cloud TPU VM, a TPU name or a grpc:// address "
           "(default: TPU_NAME)",
}
CHOICES = {"strategy": ["auto", "one_device", "mirrored", "multi_worker", "tpu"],
           "mixed_precision": MIXED_PRECISIONS}
REQUIRED = ("train", "out")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Adds one subcommand per task: `FinetuneConfig`'s flags, `--quiet` and the task's settings."""
    from kbert.tasks.registry import COMMANDS
    from kbert.training.finetune_config import FinetuneConfig

    tasks = parser.add_subparsers(dest="task", required=True, metavar="TASK")
    for command, task in COMMANDS.items():
        sub = tasks.add_parser(command, help=task.summary, description=task.summary)
        own = [field.name for field, _ in cli_fields(task)]  # a task's setting wins over a shared one
        add_dataclass_flags(sub, FinetuneConfig, help=HELP, choices=CHOICES, required=REQUIRED,
                            skip=("verbose", *own))
        sub.add_argument("--quiet", action="store_true", help=HELP["quiet"])
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
    config = FinetuneConfig(**collect(args, FinetuneConfig, skip=("verbose", *own)), verbose=0 if args.quiet else 1)
    result = finetune(task, config)
    print(json.dumps(result["metrics"], indent=2))
    print(f"wrote {result['model_dir']} ({result['train_examples_per_second']:.1f} training examples/s, "
          f"{result['replicas']} replica(s))")
    print(format_phases(result["phase_seconds"]))
    return 0
