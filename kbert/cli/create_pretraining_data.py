"""`kbert create-pretraining-data`: a text corpus to sharded masked-LM + NSP/SOP TFRecords.

Example:
    kbert create-pretraining-data --input 'corpus/*.txt' --vocab vocab.txt --out data/seq128 \\
        --sequence-length 128 --objective nsp --whole-word-masking --num-shards 8

The flags are the fields of `kbert.pretraining_data.CreatePretrainingDataConfig`, the same names as
`kbert pretrain`'s (Google's script calls them --input_file, --output_file and --max_seq_length; the
earlier --output and --max-seq-length still work for one release); the work is
`kbert.pretraining_data.create_pretraining_data`. With `--beam` the same records are built as an Apache
Beam pipeline (`pip install 'kbert[beam]'`), and Beam's own pipeline options pass through unchanged:

    kbert create-pretraining-data --beam --input 'gs://b/corpus/*.txt' --vocab vocab.txt \\
        --out gs://b/data/seq128 --num-shards 256 \\
        --runner=DataflowRunner --project=P --region=R --temp_location=gs://b/tmp
"""

from __future__ import annotations

import argparse

from kbert.cli.flags import add_dataclass_flags, collect
from kbert.constants import OBJECTIVES
from kbert.pretraining_data.corpus import LAYOUTS
from kbert.pretraining_data.create_config import MASKINGS, CreatePretrainingDataConfig
from kbert.text.text_files import ENCODING_ERRORS

PASS_UNKNOWN_ARGS = True  # `kbert.cli.main` hands unknown flags over as `args.unknown_args` (Beam's options)

HELP = {
    "input": "glob(s) of UTF-8 text files (quote them), or tfds:NAME for a local tfds dataset",
    "vocab": "WordPiece vocab.txt; must contain [MASK]",
    "out": "output directory for the TFRecord shards",
    "sequence_length": "length of a packed instance in tokens",
    "max_predictions_per_seq": "masked positions per instance (default: round(sequence_length * masked_lm_prob))",
    "masked_lm_prob": "fraction of tokens to predict",
    "short_seq_prob": "probability of a shorter instance",
    "dupe_factor": "instances made from each document, with different chunks and masks (Google: 10)",
    "objective": "nsp: next sentence (BERT); sop: sentence order (ALBERT); none: MLM only",
    "whole_word_masking": "mask all pieces of a word together (zh: words from jieba)",
    "language": "zh: segment words with jieba for whole-word masking",
    "lowercase": "uncased tokenization (--no-lowercase for cased vocabularies)",
    "layout": "sentences: one sentence a line, blank line between documents; documents: one document a "
              "line; paragraphs: a file is a document of blank-line separated paragraphs (books)",
    "masking": "static: masks written into the records; dynamic: unmasked records, masked afresh every "
               "epoch when read",
    "num_shards": "output shards; records are shuffled over the whole corpus, then spread over them",
    "seed": "seed of instances, static masks and the order of the records",
    "document_buffer": "documents held at once (shuffle window and pool of random next sentences)",
    "tfds_split": "split of a tfds input",
    "tfds_text_key": "text feature of a tfds input",
    "encoding_errors": "bytes that are not UTF-8: replace (U+FFFD, which BERT's cleaning deletes), ignore "
                       "(drop them, as Google's script does) or strict (stop); a warning names each file "
                       "with repaired lines and how many",
}
CHOICES = {"objective": OBJECTIVES, "language": ("en", "zh"), "layout": LAYOUTS, "masking": MASKINGS,
           "encoding_errors": ENCODING_ERRORS}
# Old flag -> field (hidden; they print a deprecation warning).
ALIASES = {"output": "out", "max_seq_length": "sequence_length"}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Adds one flag per `CreatePretrainingDataConfig` field, and `--beam`."""
    add_dataclass_flags(parser, CreatePretrainingDataConfig, help=HELP, choices=CHOICES,
                        required=("input", "vocab", "out"), aliases=ALIASES)
    parser.add_argument("--beam", action="store_true",
                        help="build the records as an Apache Beam pipeline (pip install 'kbert[beam]'); Beam's "
                             "pipeline options (--runner=..., --direct_num_workers=2, ...) pass through; "
                             "--document-buffer is then the size of a partition (its random-next pool)")


def run(args: argparse.Namespace) -> int:
    """Creates the pretraining data (errors in the input are printed by `kbert.cli.main`)."""
    from kbert.cli.main import UsageError
    from kbert.pretraining_data.create import create_pretraining_data

    unknown = getattr(args, "unknown_args", [])
    if unknown and not args.beam:
        raise UsageError(f"unrecognized arguments: {' '.join(unknown)} (pipeline options need --beam)")
    config = CreatePretrainingDataConfig(**collect(args, CreatePretrainingDataConfig))
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
          f"{config.sequence_length}) to {config.num_shards} shard(s) in {config.out} in "
          f"{metadata['seconds']:.1f} s.")
    return 0
