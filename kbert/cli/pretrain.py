"""`kbert pretrain`: masked LM with NSP or SOP, from TFRecords or raw text, resumable.

Every `PretrainConfig` field is a flag (`--batch-size`, `--whole-word-masking` ...); `--config FILE`
(JSON or YAML) sets any of them, and BERT model fields too (`hidden_size`, ..., or a whole
bert_config.json); flags given on the command line win over the file.
"""

from __future__ import annotations

import argparse
import json

from kbert.cli.flags import add_dataclass_flags, collect
from kbert.constants import OBJECTIVES
from kbert.precision import MIXED_PRECISION_HELP
from kbert.training.pretrain_config import PretrainConfig

HELP = {
    "train": "training data: a create-pretraining-data directory, or raw text: a file glob or tfds:NAME",
    "out": "output directory (checkpoints, logs, the final model)",
    "preset": "model size when not given by --config or --init: tiny, mini, small, medium, base, large",
    "init": "checkpoint directory to start from (HF, Google or kbert), e.g. phase 1 of a two-phase run",
    "vocab": "vocab.txt for raw text (TFRecords directories carry their own)",
    "objective": "nsp, sop or none (default: the data's objective; nsp for raw text)",
    "sequence_length": "raw text: length of a packed instance in tokens (TFRecords directories carry their own)",
    "steps": "total optimizer steps",
    "batch_size": "global batch size: all replicas together (split across them; must divide by their count)",
    "layout": "raw text: sentences, documents or paragraphs (see create-pretraining-data)",
    "encoding_errors": "raw text and --heldout-text: bytes that are not UTF-8: replace, ignore or strict",
    "heldout_text": "held-out text file(s), masked with the run's settings and a fixed seed; masked-LM and "
                    "NSP/SOP accuracy at every checkpoint go to OUT/heldout/step_NNNNNN.json and TensorBoard",
    "heldout_data": "a held-out create-pretraining-data directory, scored like --heldout-text",
    "heldout_max_instances": "held-out instances scored (the first ones)",
    "max_minutes": "stop after this many minutes of training even if --steps are not done",
    "dropout": "both dropout rates while pretraining (0 suits a short run of a small model); the saved "
               "model keeps its own rates for fine-tuning",
    "warmup_steps": "linear warmup steps (default: 10% of --steps)",
    "optimizer": "adamw or lamb",
    "mixed_precision": MIXED_PRECISION_HELP,
    "strategy": "auto, one_device, mirrored, multi_worker (TF_CONFIG) or tpu",
    "scale_learning_rate": "none, linear or sqrt: scale the learning rate with the replica count",
    "save_every_steps": "checkpoint (and crash-resume) interval in steps",
    "keep_checkpoints": "newest step checkpoints kept in OUT/checkpoints; 0 keeps all",
    "jit_compile": "compile the whole train step as one XLA program at fixed shapes (what a TPU runs); an op "
                   "XLA cannot compile is an error (always on with --strategy tpu)",
    "steps_per_execution": "batches per call of the compiled loop (fewer host round trips, e.g. on a TPU); "
                           "--save-every-steps and --steps must divide by it",
    "tpu": "with --strategy tpu: 'local' on a Cloud TPU VM, a TPU name or a grpc:// address; unset: TPU_NAME",
}


# Old flag -> field (hidden; they print a deprecation warning).
ALIASES = {"train_data": "train", "max_seq_length": "sequence_length"}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Adds `--config` and one flag per `PretrainConfig` field (`model` comes from `--config` only)."""
    parser.add_argument("--config", help="JSON or YAML file of settings (run and model fields)")
    add_dataclass_flags(parser, PretrainConfig, help=HELP, choices={"objective": OBJECTIVES}, aliases=ALIASES)


def run(args: argparse.Namespace) -> int:
    """Runs the pretraining (errors in settings or data are printed by `kbert.cli.main`)."""
    from kbert.training.pretrain import pretrain

    given = collect(args, PretrainConfig)
    config = PretrainConfig.from_file(args.config, **given) if args.config else PretrainConfig(**given)
    summary = pretrain(config)
    heldout = {f"heldout_{k}": v for k, v in summary["heldout"].items()}
    print(json.dumps({"out": config.out, "steps": summary["steps"], "seconds_per_step": summary["seconds_per_step"],
                      **summary["final_metrics"], **heldout}, indent=2))
    return 0
