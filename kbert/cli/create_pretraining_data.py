"""`kbert create-pretraining-data`: a text corpus to sharded masked-LM + NSP/SOP TFRecords.

Example:
    kbert create-pretraining-data --input 'corpus/*.txt' --vocab vocab.txt --output data/seq128 \\
        --max-seq-length 128 --objective nsp --whole-word-masking --num-shards 8

The output directory holds the shards, a copy of the vocabulary and `pretraining_data.json` with every
setting, so `kbert pretrain --train-data DIR` needs no `--vocab`.
"""

from __future__ import annotations

import argparse
import itertools
import sys
import time

from kbert.data.corpus import LAYOUTS
from kbert.data.pretraining_instances import OBJECTIVES


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Adds the command's flags (names as in Google's `create_pretraining_data.py`, dashed)."""
    parser.add_argument("--input", required=True, nargs="+",
                        help="Glob(s) of UTF-8 text files (quote them), or tfds:NAME for a local tfds dataset.")
    parser.add_argument("--vocab", required=True, help="WordPiece vocab.txt; must contain [MASK].")
    parser.add_argument("--output", required=True, help="Output directory for the TFRecord shards.")
    parser.add_argument("--max-seq-length", type=int, default=128)
    parser.add_argument("--max-predictions-per-seq", type=int, default=None,
                        help="Default: round(max_seq_length * masked_lm_prob).")
    parser.add_argument("--masked-lm-prob", type=float, default=0.15)
    parser.add_argument("--short-seq-prob", type=float, default=0.1)
    parser.add_argument("--dupe-factor", type=int, default=10,
                        help="Instances made from each document, with different chunks and masks (Google: 10).")
    parser.add_argument("--objective", choices=OBJECTIVES, default="nsp",
                        help="nsp: next sentence (BERT); sop: sentence order (ALBERT); none: MLM only.")
    parser.add_argument("--whole-word-masking", action="store_true",
                        help="Mask all pieces of a word together (zh: words from jieba).")
    parser.add_argument("--language", choices=("en", "zh"), default="en",
                        help="zh: segment words with jieba for whole-word masking.")
    parser.add_argument("--lowercase", action=argparse.BooleanOptionalAction, default=True,
                        help="Uncased tokenization (--no-lowercase for cased vocabularies).")
    parser.add_argument("--layout", choices=LAYOUTS, default="sentences",
                        help="sentences: one sentence a line, blank line between documents; "
                             "documents: one document a line.")
    parser.add_argument("--masking", choices=("static", "dynamic"), default="static",
                        help="static: masks written into the records; dynamic: unmasked records, masked "
                             "afresh every epoch when read.")
    parser.add_argument("--num-shards", type=int, default=1)
    parser.add_argument("--seed", type=int, default=12345)
    parser.add_argument("--document-buffer", type=int, default=1000,
                        help="Documents held at once (shuffle window and pool of random next sentences).")
    parser.add_argument("--tfds-split", default="train")
    parser.add_argument("--tfds-text-key", default="text")


def run(args: argparse.Namespace) -> int:
    """Creates the pretraining data; returns 0, or 1 after printing what is wrong with the input."""
    try:
        summary = create_pretraining_data(args)
    except (FileNotFoundError, ValueError, KeyError) as error:
        print(f"kbert create-pretraining-data: error: {error}", file=sys.stderr)
        return 1
    print(summary)
    return 0


def create_pretraining_data(args: argparse.Namespace) -> str:
    """Does the work of `run`; raises on bad input. Returns a one-line summary."""
    from kbert.data.corpus import TextCorpus
    from kbert.data.masking_pipeline import instance_arrays
    from kbert.data.pretraining_instances import create_pretraining_instances, tokenize_documents, tokenizer_fn
    from kbert.data.tfrecords import static_features, write_pretraining_tfrecords
    from kbert.text.bert_tokenizer import BertTokenizer, read_vocabulary
    from kbert.text.masking import StaticMasker, mask_token_id

    if args.max_seq_length < 5:
        raise ValueError(f"--max-seq-length must be >= 5, got {args.max_seq_length}.")
    if args.num_shards < 1:
        raise ValueError(f"--num-shards must be >= 1, got {args.num_shards}.")
    vocabulary = read_vocabulary(args.vocab)
    mask_token_id(vocabulary)  # MissingMaskTokenError (a ValueError) names the problem
    tokenizer = BertTokenizer(vocabulary, lowercase=args.lowercase)
    preds = args.max_predictions_per_seq or max(1, int(round(args.max_seq_length * args.masked_lm_prob)))
    inputs = args.input[0] if len(args.input) == 1 and args.input[0].startswith("tfds:") else args.input
    corpus = TextCorpus(inputs, layout=args.layout, tfds_split=args.tfds_split, text_key=args.tfds_text_key)
    documents = tokenize_documents(corpus, tokenizer_fn(tokenizer), language=args.language)
    instances = create_pretraining_instances(
        documents, max_seq_length=args.max_seq_length, cls_id=tokenizer.cls_token_id,
        sep_id=tokenizer.sep_token_id, objective=args.objective, short_seq_prob=args.short_seq_prob,
        dupe_factor=args.dupe_factor, seed=args.seed, document_buffer=args.document_buffer)
    start = time.perf_counter()
    first = next(instances, None)
    if first is None:
        raise ValueError(f"The corpus {args.input} gives no pretraining instance: it holds no text "
                         "(or only one-token sentences) after tokenization.")
    instances = itertools.chain([first], instances)
    if args.masking == "static":
        masker = StaticMasker(vocabulary, args.masked_lm_prob, preds, args.whole_word_masking, seed=args.seed + 1)
        records = (static_features(i, masker, args.max_seq_length, preds, tokenizer.pad_token_id)
                   for i in instances)
    else:
        records = (instance_arrays(i, args.max_seq_length, tokenizer.pad_token_id) for i in instances)
    settings = {
        "masking": args.masking,
        "max_seq_length": args.max_seq_length,
        "max_predictions_per_seq": preds,
        "masked_lm_prob": args.masked_lm_prob,
        "short_seq_prob": args.short_seq_prob,
        "dupe_factor": args.dupe_factor,
        "objective": args.objective,
        "whole_word_masking": args.whole_word_masking,
        "language": args.language,
        "lowercase": args.lowercase,
        "layout": args.layout,
        "seed": args.seed,
        "vocab_size": len(vocabulary),
        "inputs": list(args.input),
    }
    metadata = write_pretraining_tfrecords(records, args.output, vocab_file=args.vocab, settings=settings,
                                           num_shards=args.num_shards)
    seconds = time.perf_counter() - start
    return (f"Wrote {metadata['num_instances']} {args.masking}-masked instances ({args.objective}, seq "
            f"{args.max_seq_length}) to {args.num_shards} shard(s) in {args.output} in {seconds:.1f} s.")
