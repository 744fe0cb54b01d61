"""`kbert vocab`: learn a WordPiece vocabulary from text files."""

from __future__ import annotations

import argparse

from kbert.text.text_files import DEFAULT_ENCODING_ERRORS, ENCODING_ERRORS


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Adds the command's flags."""
    parser.add_argument("--input", nargs="+", required=True, help="text files, one text a line")
    parser.add_argument("--size", type=int, required=True, help="target vocabulary size")
    parser.add_argument("--out", required=True, help="vocab.txt to write")
    parser.add_argument("--lowercase", action="store_true", help="uncased (lower-case, strip accents)")
    parser.add_argument("--min-count", type=int, default=2, help="ignore rarer words")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    parser.add_argument("--encoding-errors", choices=ENCODING_ERRORS, default=DEFAULT_ENCODING_ERRORS,
                        help="bytes that are not UTF-8: replace (default), ignore or strict; a warning names "
                             "each file with repaired lines and how many")


def run(args: argparse.Namespace) -> int:
    """Learns the vocabulary and writes it, one token a line."""
    import kbert.file_io as file_io
    from kbert.text.vocabulary import learn_vocabulary

    vocab = learn_vocabulary(
        args.input, args.size, lowercase=args.lowercase, min_count=args.min_count, verbose=not args.quiet,
        encoding_errors=args.encoding_errors,
    )
    file_io.write_text(args.out, "\n".join(vocab) + "\n")  # creates the directory
    print(f"wrote {len(vocab)} tokens to {args.out}")
    return 0
