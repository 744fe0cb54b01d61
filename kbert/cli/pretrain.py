"""`kbert pretrain`: masked LM with NSP or SOP, from TFRecords or raw text, resumable.

Every `PretrainConfig` field is a flag (`--batch-size`, `--whole-word-masking` ...); `--config FILE`
(JSON or YAML) sets any of them, and BERT model fields too (`hidden_size`, ..., or a whole
bert_config.json); flags given on the command line win over the file.
"""

from __future__ import annotations

import argparse
import json

from kbert.cli.flags import add_dataclass_flags, collect
from kbert.training.pretrain_config import PretrainConfig


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Adds `--config` and one flag per `PretrainConfig` field (`model` comes from `--config` only)."""
    parser.add_argument("--config", help="JSON or YAML file of settings (run and model fields)")
    add_dataclass_flags(parser, PretrainConfig)


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
