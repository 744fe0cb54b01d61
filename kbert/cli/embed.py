"""`kbert embed MODEL --input GLOB --out DIR`: every row of a corpus to a vector, in Parquet shards.

Example:
    kbert embed export/minilm --input 'docs/*.jsonl' --text-column text --id-column id --out vectors \\
        --output-name mean_embedding

The flags are the fields of `kbert.embeddings.EmbedConfig`; the work is `kbert.embeddings.embed_corpus`,
and the files are described in `kbert.embeddings.embedding_files` (read them back with
`kbert.load_embeddings(DIR)`, or with any Parquet reader). With `--beam` the same files are written by an
Apache Beam pipeline (`pip install 'kbert[beam]'`), and Beam's own pipeline options pass through unchanged:

    kbert embed gs://b/export/minilm --input 'gs://b/docs/*.jsonl' --out gs://b/vectors --num-shards 64 \\
        --beam --runner=DataflowRunner --project=P --region=R --temp_location=gs://b/tmp \\
        --requirements_file=requirements.txt
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from kbert.cli.flags import add_dataclass_flags, beam_options, collect
from kbert.embeddings.embed_config import EmbedConfig

PASS_UNKNOWN_ARGS = True  # `kbert.cli.main` hands unknown flags over as `args.unknown_args` (Beam's options)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Adds one flag per `EmbedConfig` field, and `--beam`."""
    add_dataclass_flags(parser, EmbedConfig, required=("input", "out"))
    parser.add_argument("--beam", action="store_true",
                        help="run as an Apache Beam pipeline (pip install 'kbert[beam]'); Beam's pipeline options "
                             "(--runner=..., --direct_num_workers=2, ...) pass through; the same output files")


def summary(manifest: dict[str, Any]) -> list[str]:
    """The lines printed after a run: what was written, what was skipped and the first problems."""
    lines = [f"Embedded {manifest['count']} of {manifest['rows_read']} rows (dimension {manifest['dimension']}) "
             f"into {len(manifest['shards'])} Parquet shard(s) in {manifest.get('out', '')} in "
             f"{manifest['seconds']:.1f} s."]
    skipped = {problem: n for problem, n in manifest["skipped"].items() if n}
    if skipped:
        lines.append("Skipped: " + ", ".join(f"{n} {problem.replace('_', ' ')}" for problem, n in skipped.items())
                     + " (manifest.json lists the first of each):")
        lines += [f"  {message}" for messages in manifest["examples"].values() for message in messages]
    return lines


def run(args: argparse.Namespace) -> int:
    """Embeds the corpus (errors in the input are printed by `kbert.cli.main`)."""
    from kbert.cli.main import UsageError
    from kbert.embeddings.embedding_files import require_pyarrow

    pipeline_options = beam_options(args)
    config = EmbedConfig(**collect(args, EmbedConfig))
    try:
        require_pyarrow()
    except ImportError as error:
        raise UsageError(str(error)) from error
    if pipeline_options is not None:
        from kbert.embeddings.beam_embed import embed_corpus_beam

        manifest = embed_corpus_beam(config, pipeline_options)
    else:
        from kbert.embeddings.embed import embed_corpus
        from kbert.export import serving_threads

        if getattr(args, "own_process", False):  # a process that only runs the export: see serving_threads
            serving_threads.apply_serving_environment()
            serving_threads.configure_serving_threads(config.workers or serving_threads.cores())
        manifest = embed_corpus(config)
    lines = summary({**manifest, "out": config.out})
    print(lines[0])
    for line in lines[1:]:
        print(line, file=sys.stderr)
    return 0
