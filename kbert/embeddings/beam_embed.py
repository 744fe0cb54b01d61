"""`embed_corpus_beam`: `embed_corpus` as an Apache Beam pipeline, on the runner its options name.

    embed_corpus_beam(config, ["--runner=DataflowRunner", "--project=P", "--region=R",
                               "--temp_location=gs://b/tmp", "--requirements_file=req.txt"])

The same functions as the one-process path run inside the pipeline, and the output is the same files:

1. each input file is one element, read by `read_rows` in a worker (whole files, because a row's line
   number is its address in the report and a CSV row may span lines: Beam's `ReadFromText` splits files
   at byte offsets and knows neither);
2. the rows of each id meet in one group; the first in input order (file, row) is kept, the others
   counted as `duplicate_id`;
3. kept rows are grouped into the one-process path's windows (`window_key`: file, row // (sort_window *
   batch_size)), each cut into its batches longest first (`window_batches`), and each batch goes whole
   through Beam's `RunInference` with `ExportModelHandler` (the SavedModel loaded once per worker process);
4. vectors go to their shard by a hash of their id, every shard is written sorted by id (empty ones
   too), then `manifest.json` with the counts and the first few problems of each kind.

So the ids, vectors and counts depend on the input and the export alone, not on the runner, the number
of workers or their scheduling; each shard is sorted in one worker's memory (give a large corpus enough
shards: a shard of a million 384-d vectors is 1.5 GB).

Runners: `--runner=DirectRunner` (the default; `--direct_num_workers=2 --direct_running_mode=multi_processing`
for worker processes), `DataflowRunner`, `FlinkRunner`, `SparkRunner`: every worker needs kbert, TensorFlow
and tensorflow-text installed (`--requirements_file`, `--setup_file` or a custom container) and MODEL,
the inputs and OUT on a file system it can read (gs://, hdfs://, s3://), as with any Beam job.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from typing import Any

from kbert.embeddings.corpus_rows import Row, read_rows
from kbert.embeddings.embed import (EXAMPLES_KEPT, check_not_empty, duplicate, manifest_fields, prepare_output,
                                    window_batches, window_key)
from kbert.embeddings.embed_config import EmbedConfig, inputs_of
from kbert.embeddings.embedding_files import (MANIFEST_FILE, read_manifest, require_pyarrow, shard_of, write_manifest,
                                              write_shard)


def _read_file(element: tuple[int, str], config: EmbedConfig) -> Iterator[Row]:
    file_index, path = element
    return read_rows(path, file_index, config.text_column, config.id_column, config.file_format)


def _first_of_id(element: tuple[str, Sequence[Row]]) -> Iterator[Row]:
    """The rows of one id: the first in input order as it is, the later ones as duplicates."""
    _, rows = element
    first, *later = sorted(rows, key=lambda row: (row.file_index, row.row_index))
    yield first
    for row in later:
        yield duplicate(row, first.where)


def _write_shard(element: tuple[int, Sequence[Any]], out: str, num_shards: int, dimension: int) -> dict:
    shard, pairs = element
    if dimension == 0:  # not one vector in the corpus: `embed_corpus_beam` raises once the pipeline ends
        return {"file": None, "count": 0, "bytes": 0}
    return write_shard(out, shard, num_shards, [pair for pair in pairs if pair is not None], dimension)


def _write_manifest(_, config: EmbedConfig, files: Sequence[str], dimension: int, shards: Sequence[dict],
                    rows_read: int, skipped: Sequence[tuple[str, int]],
                    examples: Sequence[tuple[str, Sequence[tuple[Any, str]]]]) -> None:
    shards = sorted((shard for shard in shards if shard["file"]), key=lambda shard: shard["file"])
    messages = {problem: [message for _, message in found] for problem, found in examples}
    write_manifest(config.out, manifest_fields(config, files, dimension, shards, rows_read, dict(skipped),
                                               messages))


def build_pipeline(pipeline, config: EmbedConfig, files: Sequence[str]) -> None:
    """Adds the transforms that turn `files` into the shards and manifest of `config.out`."""
    import apache_beam as beam
    from apache_beam.ml.inference.base import RunInference

    from kbert.embeddings.model_handler import ExportModelHandler

    num_shards = config.num_shards
    rows = (pipeline
            | "Files" >> beam.Create(list(enumerate(files)))
            | "SpreadFiles" >> beam.Reshuffle()
            | "ReadRows" >> beam.FlatMap(_read_file, config=config))
    good, bad = rows | "SplitBad" >> beam.Partition(lambda row, _: 0 if row.problem is None else 1, 2)
    first, later = (good
                    | "ById" >> beam.Map(lambda row: (row.id, row))
                    | "GroupIds" >> beam.GroupByKey()
                    | "FirstOfEachId" >> beam.FlatMap(_first_of_id)
                    | "SplitDuplicates" >> beam.Partition(lambda row, _: 0 if row.problem is None else 1, 2))
    handler = ExportModelHandler(config.model, config.output_name, config.call_signature()).with_no_batching()
    vectors = (first
               | "ByWindow" >> beam.Map(lambda row: (window_key(row, config), row))
               | "GroupWindows" >> beam.GroupByKey()
               | "Batches" >> beam.FlatMapTuple(lambda _, rows: window_batches(list(rows), config))
               | "Embed" >> RunInference(handler))
    dimension = (vectors
                 | "Lengths" >> beam.Map(lambda pair: int(pair[1].shape[0]))
                 | "Dimension" >> beam.CombineGlobally(lambda lengths: max(lengths, default=0)))
    markers = pipeline | "Shards" >> beam.Create([(shard, None) for shard in range(num_shards)])
    shards = (((vectors | "ToShard" >> beam.Map(lambda pair: (shard_of(pair[0], num_shards), pair))), markers)
              | "WithEveryShard" >> beam.Flatten()
              | "GroupShards" >> beam.GroupByKey()
              | "WriteShards" >> beam.Map(_write_shard, out=config.out, num_shards=num_shards,
                                          dimension=beam.pvalue.AsSingleton(dimension)))
    problems = (bad, later) | "Problems" >> beam.Flatten()
    skipped = problems | "Kinds" >> beam.Map(lambda row: row.problem) | "CountKinds" >> beam.combiners.Count.PerElement()
    examples = (problems
                | "Places" >> beam.Map(lambda row: (row.problem, ((row.file_index, row.row_index), row.message)))
                | "FirstOfEachKind" >> beam.combiners.Top.SmallestPerKey(EXAMPLES_KEPT))
    _ = (pipeline
         | "Once" >> beam.Create([None])
         | "WriteManifest" >> beam.Map(
             _write_manifest, config=config, files=list(files), dimension=beam.pvalue.AsSingleton(dimension),
             shards=beam.pvalue.AsList(shards),
             rows_read=beam.pvalue.AsSingleton(rows | "CountRows" >> beam.combiners.Count.Globally()),
             skipped=beam.pvalue.AsList(skipped), examples=beam.pvalue.AsList(examples)))


def embed_corpus_beam(config: EmbedConfig, pipeline_args: Sequence[str] = ()) -> dict[str, Any]:
    """Runs `embed_corpus` as an Apache Beam pipeline on the runner that `pipeline_args` name.

    Args:
        config: EmbedConfig. The settings (`workers` is the one-process path's; Beam's options set its own).
        pipeline_args: Sequence[str]. Beam's pipeline options, unchanged, e.g. `["--direct_num_workers=2",
            "--direct_running_mode=multi_processing"]` (none: DirectRunner in this process).

    Returns:
        The manifest written to `OUT/manifest.json`, plus "seconds" (the wall time).

    Raises:
        ImportError: apache-beam is not installed (the message names the `kbert[beam]` extra).
        ValueError, FileNotFoundError, FileExistsError: as `embed_corpus`.

    Example:
        >>> config = EmbedConfig(model="gs://b/export/minilm", input=["gs://b/docs/*.jsonl"],
        ...                      out="gs://b/vectors", num_shards=64)  # doctest: +SKIP
        >>> embed_corpus_beam(config, ["--runner=DataflowRunner", "--project=P"])["count"]  # doctest: +SKIP
        21015324
    """
    from kbert.pretraining_data.beam_pipeline import import_beam
    from kbert.pretraining_data.corpus import expand_inputs

    beam = import_beam()
    from apache_beam.options.pipeline_options import PipelineOptions

    import kbert.file_io as file_io
    from kbert.embeddings.embedder import Embedder

    config.validate()
    require_pyarrow()
    start = time.perf_counter()
    files = expand_inputs(inputs_of(config))
    # A wrong export fails here, not in a worker.
    Embedder(config.model, config.output_name, config.call_signature())
    prepare_output(config.out, config.force)
    with beam.Pipeline(options=PipelineOptions(list(pipeline_args))) as pipeline:
        build_pipeline(pipeline, config, files)
    manifest = read_manifest(config.out)
    try:
        check_not_empty(manifest["count"], manifest["skipped"], manifest["examples"], inputs_of(config))
    except ValueError:
        file_io.remove(file_io.join(config.out, MANIFEST_FILE))  # no finished output to vouch for
        raise
    return {**manifest, "seconds": time.perf_counter() - start}
