"""`kbert create-pretraining-data`: a text corpus to sharded masked-LM + NSP/SOP TFRecords.

Example:
    kbert create-pretraining-data --input 'corpus/*.txt' --vocab vocab.txt --output data/seq128 \\
        --max-seq-length 128 --objective nsp --whole-word-masking --num-shards 8

The flags are the fields of `kbert.pretraining_data.CreatePretrainingDataConfig` (`--input` fills
`inputs`); the work is `kbert.pretraining_data.create_pretraining_data`. With `--beam` the same records are
built as an Apache Beam pipeline (`pip install 'kbert[beam]'`), and Beam's own pipeline options pass
through unchanged:

    kbert create-pretraining-data --beam --input 'gs://b/corpus/*.txt' --vocab vocab.txt \\
        --output gs://b/data/seq128 --num-shards 256 \\
        --runner=DataflowRunner --project=P --region=R --temp_location=gs://b/tmp
"""

from __future__ import annotations

import argparse

from kbert.constants import OBJECTIVES
from kbert.pretraining_data.corpus import LAYOUTS
from kbert.pretraining_data.create_config import MASKINGS, CreatePretrainingDataConfig
from kbert.text.text_files import DEFAULT_ENCODING_ERRORS, ENCODING_ERRORS

PASS_UNKNOWN_ARGS = True  # `kbert.cli.main` hands unknown flags over as `args.unknown_args` (Beam's options)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Adds the command's flags (names as in Google's `create_pretraining_data.py`, dashed)."""
    defaults = CreatePretrainingDataConfig()
    parser.add_argument("--input", required=True, nargs="+",
                        help="Glob(s) of UTF-8 text files (quote them), or tfds:NAME for a local tfds dataset.")
    parser.add_argument("--vocab", required=True, help="WordPiece vocab.txt; must contain [MASK].")
    parser.add_argument("--output", required=True, help="Output directory for the TFRecord shards.")
    parser.add_argument("--max-seq-length", type=int, default=defaults.max_seq_length)
    parser.add_argument("--max-predictions-per-seq", type=int, default=None,
                        help="Default: round(max_seq_length * masked_lm_prob).")
    parser.add_argument("--masked-lm-prob", type=float, default=defaults.masked_lm_prob)
    parser.add_argument("--short-seq-prob", type=float, default=defaults.short_seq_prob)
    parser.add_argument("--dupe-factor", type=int, default=defaults.dupe_factor,
                        help="Instances made from each document, with different chunks and masks (Google: 10).")
    parser.add_argument("--objective", choices=OBJECTIVES, default=defaults.objective,
                        help="nsp: next sentence (BERT); sop: sentence order (ALBERT); none: MLM only.")
    parser.add_argument("--whole-word-masking", action="store_true",
                        help="Mask all pieces of a word together (zh: words from jieba).")
    parser.add_argument("--language", choices=("en", "zh"), default=defaults.language,
                        help="zh: segment words with jieba for whole-word masking.")
    parser.add_argument("--lowercase", action=argparse.BooleanOptionalAction, default=defaults.lowercase,
                        help="Uncased tokenization (--no-lowercase for cased vocabularies).")
    parser.add_argument("--layout", choices=LAYOUTS, default=defaults.layout,
                        help="sentences: one sentence a line, blank line between documents; documents: one "
                             "document a line; paragraphs: a file is a document of blank-line separated "
                             "paragraphs (books).")
    parser.add_argument("--masking", choices=MASKINGS, default=defaults.masking,
                        help="static: masks written into the records; dynamic: unmasked records, masked "
                             "afresh every epoch when read.")
    parser.add_argument("--num-shards", type=int, default=defaults.num_shards,
                        help="Output shards. Records are shuffled over the whole corpus, then spread over them.")
    parser.add_argument("--seed", type=int, default=defaults.seed,
                        help="Seed of instances, static masks and the order of the records.")
    parser.add_argument("--document-buffer", type=int, default=defaults.document_buffer,
                        help="Documents held at once (shuffle window and pool of random next sentences).")
    parser.add_argument("--tfds-split", default=defaults.tfds_split)
    parser.add_argument("--tfds-text-key", default=defaults.tfds_text_key)
    parser.add_argument("--encoding-errors", choices=ENCODING_ERRORS, default=DEFAULT_ENCODING_ERRORS,
                        help="Bytes that are not UTF-8: replace (default; U+FFFD, which BERT's cleaning "
                             "deletes), ignore (drop them, as Google's script does) or strict (stop). A "
                             "warning names each file with repaired lines and how many.")
    parser.add_argument("--beam", action="store_true",
                        help="Build the records as an Apache Beam pipeline (pip install 'kbert[beam]'); Beam's "
                             "pipeline options (--runner=..., --direct_num_workers=2, ...) pass through. "
                             "--document-buffer is then the size of a partition (its random-next pool).")


def run(args: argparse.Namespace) -> int:
    """Creates the pretraining data (errors in the input are printed by `kbert.cli.main`)."""
    from kbert.cli.main import UsageError
    from kbert.pretraining_data.create import create_pretraining_data

    unknown = getattr(args, "unknown_args", [])
    if unknown and not args.beam:
        raise UsageError(f"unrecognized arguments: {' '.join(unknown)} (pipeline options need --beam)")
    fields = {f.name for f in CreatePretrainingDataConfig.__dataclass_fields__.values()}
    config = CreatePretrainingDataConfig(inputs=args.input, **{k: v for k, v in vars(args).items() if k in fields})
    try:
        if args.beam:
            from kbert.pretraining_data.beam_pipeline import create_pretraining_data_beam, import_beam

            try:
                import_beam()
            except ImportError as error:
                raise UsageError(str(error)) from error
            metadata = create_pretraining_data_beam(config, unknown)
        else:
            metadata = create_pretraining_data(config)
    except KeyError as error:  # a vocabulary without a token the data needs
        raise ValueError(f"{error.args[0] if error.args else error}") from error
    print(f"Wrote {metadata['num_instances']} {config.masking}-masked instances ({config.objective}, seq "
          f"{config.max_seq_length}) to {config.num_shards} shard(s) in {config.output} in "
          f"{metadata['seconds']:.1f} s.")
    return 0
