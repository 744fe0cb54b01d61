"""`kbert finetune classify|tag|qa`: fine-tune a pretrained (or random) BERT and write a model directory.

The common flags are `FinetuneConfig`'s fields; each task's own flags are its settings (the fields of its
`kbert.tasks` class), so a new task brings its flags with it.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import typing

from kbert.cli.main import UsageError

HELP = {
    "init": "pretrained checkpoint directory (HF, Google or kbert); without it training starts from "
            "random weights of --preset",
    "preset": "encoder size when there is no --init: a preset name (default tiny) or a checkpoint "
              "directory, whose architecture is built with fresh weights",
    "vocab": "vocab.txt for training from random weights (required without --init)",
    "train": "training data: a file or tfds:NAME[:SPLIT]",
    "validation": "validation data: a file or tfds:NAME[:SPLIT]",
    "out": "model directory to write",
    "sequence_length": "packing length in tokens (QA: the window length)",
    "epochs": "passes over the training data",
    "batch_size": "global batch size: the examples of one step summed over all replicas (default 32)",
    "learning_rate": "peak learning rate of AdamW",
    "weight_decay": "AdamW weight decay (not on LayerNorm and biases)",
    "strategy": "tf.distribute strategy: multi_worker reads TF_CONFIG",
    "mixed_precision": "Keras mixed-precision policy; auto: mixed_bfloat16 on a CPU with AMX or "
                       "AVX512-BF16, mixed_float16 on a GPU, none (float32) elsewhere",
    "seed": "shuffling and initialisation seed",
    "warmup_ratio": "fraction of steps with linear warmup",
    "dropout": "dropout before the head",
    "feature_based": "freeze the encoder, train the head only",
    "max_train_examples": "use only the first N training examples",
    "max_validation_examples": "use only the first N validation examples",
    "group_by_length": "batch training examples of similar length together, so batches pad less; "
                       "classify keeps every batch's labels in the data's shares; "
                       "an epoch of up to 16 batches stays random "
                       "(default: on; --no-group-by-length for plain random batches)",
    "train_articles": "START:STOP articles of a SQuAD JSON train file",
    "validation_articles": "START:STOP articles of the validation file",
    "quiet": "no progress bars",
    "jit_compile": "compile the whole train step as one XLA program at fixed shapes (what a TPU runs): "
                   "batches padded to --sequence-length, the last short batch dropped, no length grouping; "
                   "an op XLA cannot compile is an error (always on with --strategy tpu)",
    "steps_per_execution": "train steps per call of the compiled loop (fewer host round trips, e.g. on a TPU)",
    "tpu": "with --strategy tpu: 'local' on a Cloud TPU VM, a TPU name or a grpc:// address "
           "(default: TPU_NAME)",
}
CHOICES = {"strategy": ["auto", "one_device", "mirrored", "multi_worker", "tpu"],
           "mixed_precision": ["none", "mixed_float16", "mixed_bfloat16", "auto"]}
REQUIRED = ("train", "out")
# Flags of every task; each task's own come from its fields.
TASK_ONLY = ("train_articles", "validation_articles")


def parse_range(text: str) -> tuple[int, int]:
    """"0:40" -> (0, 40), for --train-articles / --validation-articles / --articles."""
    start, _, stop = text.partition(":")
    try:
        return int(start), int(stop)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected START:STOP (e.g. 0:40), got {text!r}") from None


def _column(text: str) -> str | int:
    return int(text) if text.lstrip("-").isdigit() else text


def _add_field(parser: argparse.ArgumentParser, field: dataclasses.Field, hint: str, help_text: str) -> None:
    """One flag for a dataclass field, typed from its annotation; its default stays the dataclass's."""
    flag = "--" + field.name.replace("_", "-")
    default = field.default if field.default is not dataclasses.MISSING else None
    if "bool" in hint:
        kind: dict = {"action": argparse.BooleanOptionalAction}
    elif "Sequence[int]" in hint:
        kind = {"type": parse_range}
    elif "int" in hint and "str" in hint:
        kind = {"type": _column}
    elif "int" in hint:
        kind = {"type": int}
    elif "float" in hint:
        kind = {"type": float}
    else:
        kind = {"type": str}
    if field.name in CHOICES:
        kind["choices"] = CHOICES[field.name]
    if default is not None and "default" not in help_text:
        help_text = f"{help_text} (default: {default})".strip()
    parser.add_argument(flag, default=None, required=field.name in REQUIRED, help=help_text, **kind)


def _fields(cls: type) -> list[tuple[dataclasses.Field, str]]:
    hints = typing.get_type_hints(cls)
    return [(f, str(hints[f.name])) for f in dataclasses.fields(cls) if f.metadata.get("cli", True)]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from kbert.tasks.registry import COMMANDS
    from kbert.training.finetune_config import FinetuneConfig

    tasks = parser.add_subparsers(dest="task", required=True, metavar="TASK")
    for command, task in COMMANDS.items():
        sub = tasks.add_parser(command, help=task.summary, description=task.summary)
        for field, hint in _fields(FinetuneConfig):
            if field.name == "verbose" or (field.name in TASK_ONLY and not task.reads_articles):
                continue
            _add_field(sub, field, hint, HELP.get(field.name, ""))
        sub.add_argument("--quiet", action="store_true", help=HELP["quiet"])
        for field, hint in _fields(task):
            _add_field(sub, field, hint, field.metadata.get("help", ""))


def task_from_args(args: argparse.Namespace):
    """The `kbert.tasks.Task` that parsed `kbert finetune TASK ...` arguments describe."""
    from kbert.tasks.registry import COMMANDS, get_task

    given = {k: v for k, v in vars(args).items() if v is not None}
    settings = COMMANDS[args.task]
    return get_task(settings.name, **{f.name: given[f.name] for f, _ in _fields(settings) if f.name in given})


def run(args: argparse.Namespace) -> int:
    from kbert.training.finetune import FinetuneConfig, finetune, format_phases

    if args.init is None and args.vocab is None:
        raise UsageError("without --init, --vocab is required (random weights need a vocabulary)")
    given = {k: v for k, v in vars(args).items() if v is not None}
    task = task_from_args(args)
    config = FinetuneConfig(**{f.name: given[f.name] for f in dataclasses.fields(FinetuneConfig)
                               if f.name in given}, verbose=0 if args.quiet else 1)
    result = finetune(task, config)
    print(json.dumps(result["metrics"], indent=2))
    print(f"wrote {result['model_dir']} ({result['train_examples_per_second']:.1f} training examples/s, "
          f"{result['replicas']} replica(s))")
    print(format_phases(result["phase_seconds"]))
    return 0
