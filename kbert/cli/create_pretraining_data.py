"""`kbert create-pretraining-data`: a text corpus to sharded masked-LM + NSP/SOP TFRecords.

Example:
    kbert create-pretraining-data --input 'corpus/*.txt' --vocab vocab.txt --out data/seq128 \\
        --sequence-length 128 --objective nsp --whole-word-masking --num-shards 8

The flags are the fields of `kbert.pretraining_data.CreatePretrainingDataConfig`, the same names as
`kbert pretrain`'s (Google's script calls them --input_file, --output_file and --max_seq_length); the
work is `kbert.pretraining_data.create_pretraining_data`. With `--beam` the same records are built as an Apache
Beam pipeline (`pip install 'kbert[beam]'`), and Beam's own pipeline options pass through unchanged:

    kbert create-pretraining-data --beam --input 'gs://b/corpus/*.txt' --vocab vocab.txt \\
        --out gs://b/data/seq128 --num-shards 256 \\
        --runner=DataflowRunner --project=P --region=R --temp_location=gs://b/tmp
"""

from __future__ import annotations

import argparse

from kbert.cli.flags import add_dataclass_flags, beam_options, collect
from kbert.pretraining_data.create_config import CreatePretrainingDataConfig

PASS_UNKNOWN_ARGS = True  # `kbert.cli.main` hands unknown flags over as `args.unknown_args` (Beam's options)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Adds one flag per `CreatePretrainingDataConfig` field, and `--beam`."""
    add_dataclass_flags(parser, CreatePretrainingDataConfig, required=("input", "vocab", "out"))
    parser.add_argument("--beam", action="store_true",
                        help="build the records as an Apache Beam pipeline (pip install 'kbert[beam]'); Beam's "
                             "pipeline options (--runner=..., --direct_num_workers=2, ...) pass through; "
                             "--document-buffer is then the size of a partition (its random-next pool)")


def run(args: argparse.Namespace) -> int:
    """Creates the pretraining data (errors in the input are printed by `kbert.cli.main`)."""
    from kbert.pretraining_data.create import create_pretraining_data

    pipeline_options = beam_options(args)
    config = CreatePretrainingDataConfig(**collect(args, CreatePretrainingDataConfig))
    try:
        if pipeline_options is not None:
            from kbert.pretraining_data.beam_pipeline import create_pretraining_data_beam

            metadata = create_pretraining_data_beam(config, pipeline_options)
        else:
            metadata = create_pretraining_data(config)
    except KeyError as error:  # a vocabulary without a token the data needs
        raise ValueError(f"{error.args[0] if error.args else error}") from error
    print(f"Wrote {metadata['num_instances']} {config.masking}-masked instances ({config.objective}, seq "
          f"{config.sequence_length}) to {config.num_shards} shard(s) in {config.out} in "
          f"{metadata['seconds']:.1f} s.")
    return 0
