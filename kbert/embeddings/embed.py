"""`embed_corpus`: every row of a corpus to a vector, in one process (`kbert embed`).

    files (sorted within each glob) -> rows (`read_rows`) -> skip and count bad rows, keep the first row
    of each id -> windows of `sort_window` batches' worth of rows, each cut into batches longest first
    -> the export's signature -> Parquet shards + manifest.json

The output (`kbert.embeddings.embedding_files`) is the same as `embed_corpus_beam`'s: the same batches
(`window_key` and `window_batches`) go through the same export, and the shards are laid out by id alone. Batches run `workers` at a time on threads (TensorFlow
releases Python's lock), as `kbert predict` runs them. The vectors are held in memory until the shards
are written (N x H x 4 bytes: 1.5 GB for a million 384-d rows); a corpus larger than one machine runs
with `--beam` on a distributed runner.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import numpy as np

import kbert.file_io as file_io
from kbert.embeddings.corpus_rows import PROBLEMS, Row, read_rows
from kbert.embeddings.embed_config import EmbedConfig, inputs_of
from kbert.embeddings.embedding_files import require_pyarrow, shard_of, write_manifest, write_shard
from kbert.length_batches import longest_first

EXAMPLES_KEPT = 5  # messages kept per problem, the first in input order


def window_key(row: Row, config: EmbedConfig) -> tuple[int, int]:
    """The window of rows whose batches a row runs in: (file, row // (sort_window * batch_size)), whichever
    runner forms the batches."""
    return row.file_index, row.row_index // (config.sort_window * config.batch_size)


def window_batches(rows: Sequence[Row], config: EmbedConfig) -> list[list[Row]]:
    """The batches of one window's rows (any order in): longest text first, ties in input order."""
    rows = sorted(rows, key=lambda row: row.row_index)
    return [[rows[i] for i in batch]
            for batch in longest_first([len(row.text) for row in rows], config.batch_size, config.sort_window)]


def duplicate(row: Row, first_where: str) -> Row:
    """`row`, skipped as a later row of an id first seen at `first_where`."""
    return row._replace(text=None, problem="duplicate_id",
                        message=f"{row.where}: duplicate id {row.id!r} (the row kept is {first_where})")


def prepare_output(out: str, force: bool) -> None:
    """Creates `out`; an existing non-empty `out` is an error unless `force`, which empties it first."""
    if file_io.exists(out) and file_io.listdir(out):
        if not force:
            raise FileExistsError(f"{out} exists and is not empty; pass --force to replace it")
        file_io.rmtree(out)
    file_io.makedirs(out)


def manifest_fields(config: EmbedConfig, files: Sequence[str], dimension: int, shards: Sequence[dict],
                    rows_read: int, skipped: dict[str, int], examples: dict[str, list[str]]) -> dict[str, Any]:
    """The fields of `manifest.json` (see `kbert.embeddings.embedding_files`)."""
    from kbert.embeddings.embedding_files import ORDER

    return {"count": sum(s["count"] for s in shards), "dimension": dimension, "dtype": "float32",
            "order": ORDER, **config.settings(), "inputs": list(files), "rows_read": rows_read,
            "skipped": {p: int(skipped.get(p, 0)) for p in PROBLEMS},
            "examples": {p: list(examples[p]) for p in PROBLEMS if examples.get(p)},
            "shards": list(shards)}


def check_not_empty(count: int, skipped: dict[str, int], examples: dict[str, list[str]],
                    inputs: Sequence[str]) -> None:
    """ValueError when no row gave a vector, with the counts of why and the first problems."""
    if count == 0:
        reasons = ", ".join(f"{n} {p}" for p, n in skipped.items() if n) or "no data rows"
        first = [message for messages in examples.values() for message in messages][:3]
        raise ValueError(f"no row of {list(inputs)} gives a vector ({reasons})" + (f": {first}" if first else ""))


def embed_corpus(config: EmbedConfig) -> dict[str, Any]:
    """Embeds every row of `config.input` with `config.model` into Parquet shards at `config.out`.

    Args:
        config: EmbedConfig. The settings (`kbert embed`'s flags).

    Returns:
        The manifest written to `OUT/manifest.json`, plus "seconds" (the wall time).

    Raises:
        ImportError: pyarrow (which writes the Parquet shards) is not installed.
        ValueError: a bad setting, an unreadable file (named with its line), or no row with a vector.
        FileNotFoundError: a glob that matches nothing, or a model that is not a SavedModel.
        FileExistsError: `out` is not empty and `config.force` is False.

    Example:
        >>> config = EmbedConfig(model="export/minilm", input=["docs/*.jsonl"], out="vectors",
        ...                      output_name="mean_embedding")  # doctest: +SKIP
        >>> embed_corpus(config)["count"]  # doctest: +SKIP
        2067
    """
    from kbert.embeddings.embedder import Embedder
    from kbert.export.serving_threads import cores, run_in_flight
    from kbert.pretraining_data.corpus import expand_inputs

    config.validate()
    require_pyarrow()  # before the work, not when the shards are written
    start = time.perf_counter()
    files = expand_inputs(inputs_of(config))
    embedder = Embedder(config.model, config.output_name, config.call_signature())
    prepare_output(config.out, config.force)
    rows_read = 0
    skipped = dict.fromkeys(PROBLEMS, 0)
    examples: dict[str, list[str]] = {p: [] for p in PROBLEMS}
    seen: dict[str, str] = {}

    def batches() -> Iterator[list[Row]]:
        nonlocal rows_read
        for file_index, path in enumerate(files):
            window: list[Row] = []
            for row in read_rows(path, file_index, config.text_column, config.id_column, config.file_format):
                rows_read += 1
                if row.problem is None and row.id in seen:
                    row = duplicate(row, seen[row.id])
                if row.problem is not None:
                    skipped[row.problem] += 1
                    if len(examples[row.problem]) < EXAMPLES_KEPT:
                        examples[row.problem].append(row.message)
                    continue
                seen[row.id] = row.where
                if window and window_key(window[0], config) != window_key(row, config):
                    yield from window_batches(window, config)
                    window = []
                window.append(row)
            yield from window_batches(window, config)

    workers = config.workers or cores()
    pairs: list[tuple[str, np.ndarray]] = []
    for window in _windows(batches(), 4 * workers):
        embedded = run_in_flight(lambda batch: embedder([row.text for row in batch]), window, workers)
        for batch, vectors in zip(window, embedded):
            pairs.extend(zip((row.id for row in batch), vectors))
    dimension = int(pairs[0][1].shape[0]) if pairs else int(embedder.dimension or 0)
    by_shard: dict[int, list[tuple[str, np.ndarray]]] = {s: [] for s in range(config.num_shards)}
    for pair in pairs:
        by_shard[shard_of(pair[0], config.num_shards)].append(pair)
    check_not_empty(len(pairs), skipped, examples, inputs_of(config))
    shards = [write_shard(config.out, s, config.num_shards, by_shard[s], dimension) for s in by_shard]
    manifest = write_manifest(config.out, manifest_fields(config, files, dimension, shards, rows_read, skipped,
                                                          examples))
    return {**manifest, "seconds": time.perf_counter() - start}


def _windows(items: Iterable[Any], size: int) -> Iterator[list[Any]]:
    """`items` in lists of `size` (the last shorter): enough batches in flight, not the whole corpus."""
    iterator = iter(items)
    while window := list(itertools.islice(iterator, size)):
        yield window
