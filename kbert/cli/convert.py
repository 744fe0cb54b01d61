"""`kbert convert SRC --out DIR --format kbert|hf|google`: rewrite a checkpoint in another layout."""

from __future__ import annotations

import argparse


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("source", help="a checkpoint directory: Hugging Face, Google TF1 or kbert")
    parser.add_argument("--out", required=True, help="directory to write")
    parser.add_argument("--format", choices=("kbert", "hf", "google"), default="kbert",
                        help="layout to write (default: kbert)")


def run(args: argparse.Namespace) -> int:
    import kbert.file_io as file_io
    from kbert.convert import checkpoints

    source, out = args.source, args.out
    config, tensors = checkpoints.read_checkpoint(source)
    encoder = checkpoints.load_pretrained(source)  # validates every tensor against the config
    heads = checkpoints.read_pretraining_heads(source)
    vocabulary = file_io.join(source, "vocab.txt") if file_io.isfile(file_io.join(source, "vocab.txt")) else None
    if args.format == "google":
        checkpoints.write_google_checkpoint(
            {**checkpoints.encoder_tensors(encoder), **heads}, config, out, vocabulary=vocabulary
        )
    else:
        checkpoints.save_pretrained(encoder, out, format=args.format, vocabulary=vocabulary,
                                    head_tensors=heads or None)
        tokenizer_config = file_io.join(source, "tokenizer_config.json")
        if file_io.isfile(tokenizer_config) and vocabulary is not None:
            file_io.copy(tokenizer_config, file_io.join(out, "tokenizer_config.json"))
    print(f"Wrote {args.format} checkpoint ({len(tensors)} tensors) to {out}")
    return 0
