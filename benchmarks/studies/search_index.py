"""`kbert index`: query latency at batch 1 of the search SavedModel against faiss `IndexFlatIP`, same vectors.

For each index size (100k and 1M random unit vectors of dimension 384, ids "v0", "v1", ...) this writes
the vectors as `kbert embed` does (Parquet shards and manifest.json), builds the index with `kbert index
--metric dot --top-k 10` in its own process (the export's encoder: a `kbert export` of all-MiniLM-L6-v2),
loads the SavedModel and times, one query at a time (median and 90th percentile of `--calls` calls after
5 warm-up calls):

- `search_vectors` with a precomputed unit query vector: the exact top-k alone (a product with every
  stored vector, then `tf.math.top_k`), encoding excluded;
- faiss-cpu `IndexFlatIP.search` on the same vectors and query (faiss' own exact inner-product search),
  with its OpenMP threads (one per core) and with one thread;
- `serving_default` with a text: the whole strings-in call (tokenizer, encoder, search);
- the export's own `serving_default` on that text: the encoding alone, for the split.

TensorFlow uses its default intra-op pool (every core). It reports the
SavedModel's size on disk, its build time, and whether TensorFlow and faiss return the same top-10 ids.

    python -m benchmarks.studies.search_index [--export DIR] [--sizes 100000 1000000] [--calls 50]

Needs faiss-cpu (`pip install faiss-cpu`) for the peer column; without it the kbert figures alone.
"""

from __future__ import annotations

import argparse
import os
import pathlib
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[2]
DIMENSION = 384
QUERY = "how do magnets attract iron"


def run_kbert(*argv: str) -> float:
    """Runs `kbert ARGV` in a fresh process; returns its wall seconds."""
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2",
               PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "kbert.cli.main", *argv], env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"kbert {argv[0]} failed:\n{proc.stderr[-3000:]}")
    print(proc.stdout.strip())
    return time.perf_counter() - start


def write_vectors(directory: str, vectors: np.ndarray, export: str, output_name: str, num_shards: int = 8) -> None:
    """`vectors` with ids v0, v1, ... as `kbert embed` writes them."""
    from kbert.embeddings.embedding_files import shard_of, write_manifest, write_shard

    ids = [f"v{i}" for i in range(len(vectors))]
    shard = np.array([shard_of(i, num_shards) for i in ids])
    shards = []
    for s in range(num_shards):
        rows = np.flatnonzero(shard == s)
        shards.append(write_shard(directory, s, num_shards, [(ids[r], vectors[r]) for r in rows], DIMENSION))
    write_manifest(directory, {"count": len(ids), "dimension": DIMENSION, "model": export,
                               "signature": "serving_default", "output_name": output_name, "shards": shards})


def latency_ms(fn, calls: int) -> tuple[float, float]:
    """(median, 90th percentile) milliseconds of `fn()` over `calls` calls, after 5 warm-up calls."""
    for _ in range(5):
        fn()
    times = []
    for _ in range(calls):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1e3)
    return float(np.median(times)), float(np.percentile(times, 90))


def directory_bytes(path: pathlib.Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--export", help="a kbert export of all-MiniLM-L6-v2 (default: written here first)")
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--calls", type=int, default=50)
    parser.add_argument("--work", help="work directory (default: a temporary one)")
    args = parser.parse_args()
    import json

    import tensorflow as tf
    import tensorflow_text  # noqa: F401

    import kbert

    try:
        import faiss
    except ImportError:
        faiss = None
        print("faiss-cpu is not installed (pip install faiss-cpu): kbert's figures alone.")
    with tempfile.TemporaryDirectory() as tmp:
        work = pathlib.Path(args.work or tmp)
        work.mkdir(parents=True, exist_ok=True)
        export = args.export
        if export is None:
            export = str(work / "minilm")
            run_kbert("export", str(kbert.pretrained.minilm_path()), "--out", export, "--sequence-length", "256",
                      "--force")
        config = json.loads((pathlib.Path(export) / "assets" / "kbert_export.json").read_text(encoding="utf-8"))
        output_name = ("embedding" if "embedding" in config["signatures"]["serving_default"]["outputs"]
                       else "mean_embedding")
        encode = tf.saved_model.load(export).signatures["serving_default"]
        encode_ms = latency_ms(lambda: encode(text=tf.constant([QUERY])), args.calls)
        rng = np.random.default_rng(0)
        query = rng.standard_normal((1, DIMENSION)).astype(np.float32)
        query /= np.linalg.norm(query)
        rows = []
        for size in args.sizes:
            vectors = rng.standard_normal((size, DIMENSION)).astype(np.float32)
            vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
            emb, out = work / f"emb-{size}", work / f"index-{size}"
            write_vectors(str(emb), vectors, export, output_name)
            build_s = run_kbert("index", str(emb), "--out", str(out), "--top-k", "10", "--metric", "dot", "--force")
            loaded = tf.saved_model.load(str(out))
            search, whole = loaded.signatures["search_vectors"], loaded.signatures["serving_default"]
            constant = tf.constant(query)
            topk_ms = latency_ms(lambda: search(embedding=constant), args.calls)
            whole_ms = latency_ms(lambda: whole(text=tf.constant([QUERY])), args.calls)
            tf_ids = [int(i.decode()[1:]) for i in search(embedding=constant)["ids"].numpy()[0]]
            row = {"size": size, "topk": topk_ms, "whole": whole_ms, "bytes": directory_bytes(out), "build": build_s}
            if faiss is not None:
                index = faiss.IndexFlatIP(DIMENSION)
                index.add(vectors)
                row["faiss"] = latency_ms(lambda: index.search(query, 10), args.calls)
                threads = faiss.omp_get_max_threads()
                faiss.omp_set_num_threads(1)
                row["faiss_1"] = latency_ms(lambda: index.search(query, 10), args.calls)
                faiss.omp_set_num_threads(threads)
                row["same_ids"] = list(index.search(query, 10)[1][0]) == tf_ids
                del index
            rows.append(row)
            del loaded, vectors
        print(f"\nbatch 1, k 10, dimension {DIMENSION}, {os.cpu_count()} CPUs; ms as median / p90 of {args.calls} "
              f"calls. Encoding alone (the export, '{QUERY}'): {encode_ms[0]:.1f} / {encode_ms[1]:.1f} ms.\n")
        print("| vectors | kbert top-k alone | faiss IndexFlatIP | faiss, 1 thread | kbert / faiss best | "
              "whole strings-in call | same top-10 | SavedModel | build s |")
        print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
        nan = (float("nan"), float("nan"))
        for row in rows:
            faiss_ms, faiss_1 = row.get("faiss", nan), row.get("faiss_1", nan)
            best = min(faiss_ms[0], faiss_1[0])
            print(f"| {row['size']:,} | {row['topk'][0]:.1f} / {row['topk'][1]:.1f} | {faiss_ms[0]:.1f} / "
                  f"{faiss_ms[1]:.1f} | {faiss_1[0]:.1f} / {faiss_1[1]:.1f} | {row['topk'][0] / best:.2f}x | "
                  f"{row['whole'][0]:.1f} / "
                  f"{row['whole'][1]:.1f} | {row.get('same_ids', 'n/a')} | {row['bytes'] / 1e6:,.0f} MB | "
                  f"{row['build']:.0f} |")


if __name__ == "__main__":
    main()
