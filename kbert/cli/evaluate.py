"""`kbert evaluate DIR --data SRC`: score a fine-tuned model directory and print its metrics as JSON."""

from __future__ import annotations

import argparse
import json

from kbert.cli.finetune import parse_range


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("model_dir", metavar="DIR", help="model directory written by `kbert finetune`")
    parser.add_argument("--data", required=True, help="a file or tfds:NAME[:SPLIT], with the training columns")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--articles", type=parse_range, help="START:STOP articles of a SQuAD JSON file")
    parser.add_argument("--max-examples", type=int, help="score only the first N examples")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")


def run(args: argparse.Namespace) -> int:
    from kbert.training.finetune import evaluate_model

    metrics = evaluate_model(args.model_dir, args.data, batch_size=args.batch_size, article_range=args.articles,
                             max_examples=args.max_examples, verbose=0 if args.quiet else 1)
    print(json.dumps(metrics, indent=2))
    return 0
