"""`kbert finetune classify|tag|qa`: fine-tune a pretrained (or random) BERT and write a model directory."""

from __future__ import annotations

import argparse
import json


def _range(text: str) -> tuple[int, int]:
    start, _, stop = text.partition(":")
    try:
        return int(start), int(stop)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected START:STOP (e.g. 0:40), got {text!r}") from None


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--init", help="pretrained checkpoint directory (HF, Google or kbert); "
                        "without it training starts from random weights of --preset")
    parser.add_argument("--preset", default="tiny", help="encoder size when there is no --init (default tiny)")
    parser.add_argument("--vocab", help="vocab.txt for training from random weights (required without --init)")
    parser.add_argument("--train", required=True, help="training data: a file or tfds:NAME[:SPLIT]")
    parser.add_argument("--validation", help="validation data: a file or tfds:NAME[:SPLIT]")
    parser.add_argument("--out", required=True, help="model directory to write")
    parser.add_argument("--sequence-length", type=int, default=128)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=32, help="global batch size")
    parser.add_argument("--learning-rate", type=float, default=5e-5)
    parser.add_argument("--warmup-ratio", type=float, default=0.1, help="fraction of steps with linear warmup")
    parser.add_argument("--weight-decay", type=float, default=0.01)
    parser.add_argument("--dropout", type=float, default=0.1, help="dropout before the head")
    parser.add_argument("--feature-based", action="store_true", help="freeze the encoder, train the head only")
    parser.add_argument("--strategy", default="auto",
                        choices=["auto", "one_device", "mirrored", "multi_worker", "tpu"])
    parser.add_argument("--mixed-precision", default="none", choices=["none", "mixed_float16", "mixed_bfloat16"])
    parser.add_argument("--max-train-examples", type=int, help="use only the first N training examples")
    parser.add_argument("--max-validation-examples", type=int, help="use only the first N validation examples")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quiet", action="store_true", help="no progress bars")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    tasks = parser.add_subparsers(dest="task", required=True, metavar="TASK")
    classify = tasks.add_parser("classify", help="one text or a text pair -> a class (or a score)")
    _common(classify)
    classify.add_argument("--text-column", help="text column (files: default 'text'; tfds: its own)")
    classify.add_argument("--text-pair-column", help="second text column for sentence pairs")
    classify.add_argument("--label-column", default="label")
    classify.add_argument("--regression", action="store_true", default=None,
                          help="float labels, MSE loss (auto-detected when labels have decimals)")
    tag = tasks.add_parser("tag", help="a label per word (NER, POS) from CoNLL files or tfds:conll2003")
    _common(tag)
    tag.add_argument("--tag-column", default="ner", help="ner, pos, chunk or a column index")
    qa = tasks.add_parser("qa", help="extractive question answering (SQuAD JSON or tfds:squad/...)")
    _common(qa)
    qa.add_argument("--doc-stride", type=int, default=128, help="tokens between window starts")
    qa.add_argument("--max-query-length", type=int, default=64)
    qa.add_argument("--max-answer-length", type=int, default=30)
    qa.add_argument("--train-articles", type=_range, help="START:STOP articles of a SQuAD JSON train file")
    qa.add_argument("--validation-articles", type=_range, help="START:STOP articles of the validation file")


def run(args: argparse.Namespace) -> int:
    from kbert.training.finetune import finetune

    if args.init is None and args.vocab is None:
        raise SystemExit("kbert finetune: without --init, --vocab is required (random weights need a vocabulary)")
    extra = {}
    if args.task == "classify":
        extra = dict(text_column=args.text_column, text_pair_column=args.text_pair_column,
                     label_column=args.label_column, regression=args.regression)
    elif args.task == "tag":
        column = int(args.tag_column) if args.tag_column.lstrip("-").isdigit() else args.tag_column
        extra = dict(tag_column=column)
    else:
        extra = dict(doc_stride=args.doc_stride, max_query_length=args.max_query_length,
                     max_answer_length=args.max_answer_length, train_article_range=args.train_articles,
                     validation_article_range=args.validation_articles)
    result = finetune(
        args.task, args.init, args.train, args.validation, args.out, preset=args.preset, vocab=args.vocab,
        sequence_length=args.sequence_length, epochs=args.epochs, batch_size=args.batch_size,
        learning_rate=args.learning_rate, warmup_ratio=args.warmup_ratio, weight_decay=args.weight_decay,
        dropout=args.dropout, feature_based=args.feature_based, strategy=args.strategy,
        mixed_precision=args.mixed_precision, max_train_examples=args.max_train_examples,
        max_validation_examples=args.max_validation_examples, seed=args.seed, verbose=0 if args.quiet else 1,
        **extra,
    )
    print(json.dumps(result["metrics"], indent=2))
    print(f"wrote {result['model_dir']} ({result['train_examples_per_second']:.1f} training examples/s, "
          f"{result['replicas']} replica(s))")
    return 0
