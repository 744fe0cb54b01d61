"""The files `kbert embed` writes: Parquet shards of (id, vector) and `manifest.json`, readable without kbert.

    OUT/part-00000-of-00004.parquet ...   one shard per --num-shards, every one written (empty ones too)
    OUT/manifest.json                     written last: a directory without it is unfinished

Each shard is a Parquet file of two columns:

    id          string (UTF-8), unique over all shards
    embedding   fixed_size_list<float32>[H]  (Arrow; Parquet stores it as a list of floats)

A row's shard is `blake2b(id as UTF-8, 8 bytes) read little-endian, mod num_shards`, and each shard is
sorted by id (its UTF-8 bytes). So the same rows give byte-identical shards, whatever wrote them (the one
process or any Beam runner), and a shard holds what it holds because of its ids alone. Any Parquet reader
takes them: `pandas.read_parquet(OUT)`, `pyarrow.dataset.dataset(OUT)`, DuckDB, Spark.

`manifest.json`:

    {"format": "kbert-embeddings", "version": 1, "count": N, "dimension": H, "dtype": "float32",
     "order": ..., "model": MODEL, "signature": ..., "output_name": ..., "text_column": ...,
     "id_column": ..., "batch_size": ..., "inputs": [files, in input order], "rows_read": R,
     "skipped": {"bad_utf8": n, "empty_text": n, "missing_id": n, "duplicate_id": n},
     "examples": {problem: ["path:line: what is wrong", ... the first 5 in input order]},
     "shards": [{"file": NAME, "count": n, "bytes": b}, ...]}

with `count + sum(skipped) == rows_read`.

Example:
    >>> import numpy as np
    >>> vectors = np.eye(3, dtype=np.float32)
    >>> rows = [("b", vectors[1]), ("a", vectors[0])]
    >>> shards = [write_shard("ram://kbert-vectors", s, 2, [r for r in rows if shard_of(r[0], 2) == s], 3)
    ...           for s in range(2)]
    >>> _ = write_manifest("ram://kbert-vectors", {"count": 2, "dimension": 3, "shards": shards})
    >>> ids, got = load_embeddings("ram://kbert-vectors")
    >>> ids, got.shape
    (['a', 'b'], (2, 3))
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

import numpy as np

import kbert.file_io as file_io

FORMAT = "kbert-embeddings"
MANIFEST_FILE = "manifest.json"
ORDER = "shard = blake2b-64(id) mod num_shards; each shard sorted by id (UTF-8 bytes)"


def shard_name(index: int, num_shards: int) -> str:
    """`part-00003-of-00008.parquet`."""
    return f"part-{index:05d}-of-{num_shards:05d}.parquet"


def shard_of(identifier: str, num_shards: int) -> int:
    """The shard of an id: a hash of its UTF-8 bytes, the same in every process and Python (unlike `hash`)."""
    digest = hashlib.blake2b(identifier.encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest, "little") % num_shards


def require_pyarrow():
    """`(pyarrow, pyarrow.parquet)`, or an ImportError that says how to install them."""
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError as error:
        raise ImportError(f"kbert embed writes Parquet with pyarrow: pip install pyarrow (it comes with "
                          f"'kbert[beam]') ({error})") from error
    return pa, pq


def write_shard(out: str, shard: int, num_shards: int, rows: Sequence[tuple[str, np.ndarray]],
                dimension: int) -> dict[str, Any]:
    """Writes the rows of one shard, sorted by id; returns its manifest entry.

    Args:
        out: str. The output directory.
        shard: int. The shard's index.
        num_shards: int. How many shards there are.
        rows: (id, vector) pairs, any order; every id's `shard_of` must be `shard`.
        dimension: int. H, the vectors' length (an empty shard still has the column's type).

    Returns:
        `{"file": name, "count": rows, "bytes": size}`.
    """
    pa, pq = require_pyarrow()
    strays = [identifier for identifier, _ in rows if shard_of(identifier, num_shards) != shard]
    if strays:
        raise ValueError(f"ids {strays[:3]} do not belong in shard {shard} of {num_shards}")
    rows = sorted(rows, key=lambda row: row[0].encode("utf-8"))
    ids = [identifier for identifier, _ in rows]
    vectors = (np.stack([np.asarray(vector, np.float32) for _, vector in rows]) if rows
               else np.zeros((0, dimension), np.float32))
    if vectors.shape[1] != dimension:
        raise ValueError(f"vectors of length {vectors.shape[1]} in a shard of dimension {dimension}")
    table = pa.table({"id": pa.array(ids, pa.string()),
                      "embedding": pa.FixedSizeListArray.from_arrays(pa.array(vectors.reshape(-1)), dimension)})
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink)  # into memory, then through tf.io.gfile: OUT may be a URL
    data = sink.getvalue().to_pybytes()
    name = shard_name(shard, num_shards)
    file_io.write_bytes(file_io.join(out, name), data)
    return {"file": name, "count": len(ids), "bytes": len(data)}


def write_manifest(out: str, fields: dict[str, Any]) -> dict[str, Any]:
    """Writes `manifest.json` (last: it vouches for the shards), the format's name and version first;
    returns what it wrote."""
    manifest = {"format": FORMAT, "version": 1, **fields}
    file_io.write_json(file_io.join(out, MANIFEST_FILE), manifest)
    return manifest


def read_manifest(directory: str) -> dict[str, Any]:
    """The manifest of an embeddings directory; FileNotFoundError (unfinished or not one) or ValueError."""
    path = file_io.join(directory, MANIFEST_FILE)
    if not file_io.isfile(path):
        raise FileNotFoundError(f"{directory} has no {MANIFEST_FILE}: not a finished `kbert embed` output")
    manifest = file_io.read_json(path)
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise ValueError(f"{path}: not a {FORMAT} manifest")
    return manifest


def load_embeddings(directory: str) -> tuple[list[str], np.ndarray]:
    """The ids and vectors that `kbert embed` wrote to `directory`.

    Args:
        directory: str. The `--out` of `kbert embed` (local or a URL).

    Returns:
        (ids, vectors): a list of N str, and an `(N, H)` float32 array, row i the vector of `ids[i]`. Rows
        come shard by shard in the manifest's order, each shard sorted by id.

    Raises:
        FileNotFoundError: no manifest (not an embeddings directory, or an unfinished one) or a missing shard.
        ValueError: a shard disagrees with the manifest (count, dimension, columns).

    Example:
        >>> ids, vectors = load_embeddings("vectors/")  # doctest: +SKIP
        >>> vectors.shape  # doctest: +SKIP
        (2067, 384)
    """
    pa, pq = require_pyarrow()
    manifest = read_manifest(directory)
    dimension = int(manifest["dimension"])
    ids: list[str] = []
    parts = []
    for shard in manifest["shards"]:
        path = file_io.join(directory, shard["file"])
        table = pq.read_table(pa.BufferReader(file_io.read_bytes(path)))
        if table.column_names != ["id", "embedding"] or table.num_rows != shard["count"]:
            raise ValueError(f"{path}: expected {shard['count']} rows of (id, embedding), got {table.num_rows} "
                             f"rows of {table.column_names}")
        column = table.column("embedding").combine_chunks()
        if column.type.list_size != dimension:
            raise ValueError(f"{path}: vectors of length {column.type.list_size}, the manifest says {dimension}")
        ids.extend(table.column("id").to_pylist())
        parts.append(column.flatten().to_numpy(zero_copy_only=False).astype(np.float32).reshape(-1, dimension))
    vectors = np.concatenate(parts) if parts else np.zeros((0, dimension), np.float32)
    if len(ids) != manifest["count"]:
        raise ValueError(f"{directory}: the shards hold {len(ids)} rows, the manifest says {manifest['count']}")
    return ids, vectors
