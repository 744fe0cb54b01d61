"""The matrix products of BERT inference, TensorFlow against PyTorch, on 1 thread and on every core.

    python -m benchmarks.products [--repeats 20] [--tf-variants default,eigen,...] [--no-write]

Each cell runs in a process of its own, since thread counts and TensorFlow's environment knobs take effect
only before the framework starts. The shapes are all-MiniLM-L6-v2's (hidden 384, 12 heads of 32, feed-forward
1,536), the model kbert serves in its benchmarks, at batch 32 x 40 tokens (SST-2's longest rows) and 32 x 128:
the fused query/key/value product, the attention output, the feed-forward's two products, and the two
batched products inside attention. Rates are GFLOP/s, the median of `--repeats` calls after one warm-up.
float32 always; bfloat16 where the CPU multiplies it natively (avx512_bf16 or amx_bf16).

`--tf-variants` adds TensorFlow columns for the thread investigation (docs/investigations/intel-threads.md):
each variant names an environment or a threading setting, defined in `TF_VARIANTS` below.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from concurrent.futures import ThreadPoolExecutor

from benchmarks.common.report import (command_line, cpu_flags_that_matter, cpu_name, host_key, run_in_own_process,
                                      write_section)

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

HIDDEN, HEADS, FFN = 384, 12, 1536
HEAD_DIM = HIDDEN // HEADS
BATCH = 32
LENGTHS = (40, 128)

# name -> (environment for the child process, inter-op threads or None for TensorFlow's default, XLA). The
# variant "in-flight" is a different measurement: every core runs a product of its own on one thread
# (`kbert.export.serving_threads`), and the rate counts all of them.
TF_VARIANTS: dict[str, tuple[dict[str, str], int | None, bool]] = {
    "default": ({"TF_ENABLE_ONEDNN_OPTS": "1"}, None, False),
    "eigen": ({"TF_ENABLE_ONEDNN_OPTS": "0"}, None, False),
    "inter1": ({"TF_ENABLE_ONEDNN_OPTS": "1"}, 1, False),
    "caller": ({"TF_ENABLE_ONEDNN_OPTS": "1", "TF_ONEDNN_THREADPOOL_USE_CALLER_THREAD": "1"}, None, False),
    "caller-inter1": ({"TF_ENABLE_ONEDNN_OPTS": "1", "TF_ONEDNN_THREADPOOL_USE_CALLER_THREAD": "1"}, 1, False),
    "xla": ({"TF_ENABLE_ONEDNN_OPTS": "1"}, None, True),
    "frozen": ({"TF_ENABLE_ONEDNN_OPTS": "1", "TF_ONEDNN_ASSUME_FROZEN_WEIGHTS": "1"}, None, False),
    "in-flight": ({"TF_ENABLE_ONEDNN_OPTS": "1"}, None, False),
}


def shapes() -> list[tuple[str, int, int, int, int]]:
    """(name, batch of products, m, k, n) for each product of one encoder layer, at each length."""
    rows = []
    for length in LENGTHS:
        m = BATCH * length
        tag = f"{BATCH}x{length}"
        rows += [
            (f"{tag} query/key/value", 1, m, HIDDEN, 3 * HIDDEN),
            (f"{tag} attention output", 1, m, HIDDEN, HIDDEN),
            (f"{tag} feed-forward in", 1, m, HIDDEN, FFN),
            (f"{tag} feed-forward out", 1, m, FFN, HIDDEN),
            (f"{tag} scores q.k (batched)", BATCH * HEADS, length, HEAD_DIM, length),
            (f"{tag} context p.v (batched)", BATCH * HEADS, length, length, HEAD_DIM),
        ]
    return rows


def median_seconds(call, repeats: int) -> float:
    call()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def rates_tf(threads: int, dtype: str, repeats: int, inter_op: int | None, jit: bool,
             in_flight: bool = False) -> list[float]:
    import tensorflow as tf

    from kbert.export import serving_threads

    if in_flight:  # `threads` products at once, each on one thread
        serving_threads.configure_serving_threads(threads)
    else:
        tf.config.threading.set_intra_op_parallelism_threads(threads)
        if inter_op is not None:
            tf.config.threading.set_inter_op_parallelism_threads(inter_op)
    out = []
    pool = ThreadPoolExecutor(max_workers=threads)
    for _, b, m, k, n in shapes():
        lhs = tf.cast(tf.random.normal((b, m, k) if b > 1 else (m, k)), dtype)
        rhs = tf.cast(tf.random.normal((b, k, n) if b > 1 else (k, n)), dtype)
        product = tf.function(lambda: tf.matmul(lhs, rhs), jit_compile=jit)
        # No `.numpy()`: a call returns once its product is done, and copying the result out would be timed
        # only on TensorFlow's side (PyTorch's result stays a tensor too).
        if in_flight:  # one pool for every call: starting threads is not the products' time
            seconds = median_seconds(lambda: list(pool.map(lambda _: product(), range(threads))), repeats)
            out.append(threads * 2 * b * m * k * n / seconds / 1e9)
        else:
            out.append(2 * b * m * k * n / median_seconds(product, repeats) / 1e9)
    pool.shutdown()
    return out


def rates_torch(threads: int, dtype: str, repeats: int) -> list[float]:
    import torch

    torch.set_num_threads(threads)
    out = []
    for _, b, m, k, n in shapes():
        lhs = torch.randn((b, m, k) if b > 1 else (m, k)).to(getattr(torch, dtype))
        rhs = torch.randn((b, k, n) if b > 1 else (k, n)).to(getattr(torch, dtype))
        with torch.inference_mode():
            out.append(2 * b * m * k * n / median_seconds(lambda: torch.matmul(lhs, rhs), repeats) / 1e9)
    return out


def child(spec: dict) -> list[float]:
    """One cell, in this (fresh) process: the variant's environment is set before the framework loads."""
    if spec["framework"] == "torch":
        return rates_torch(spec["threads"], spec["dtype"], spec["repeats"])
    environment, inter_op, jit = TF_VARIANTS[spec["variant"]]
    os.environ.update(environment)
    return rates_tf(spec["threads"], spec["dtype"], spec["repeats"], inter_op, jit, spec["variant"] == "in-flight")


def measure(spec: dict) -> list[float]:
    """Runs one cell in a process of its own; returns its GFLOP/s per shape."""
    return run_in_own_process("benchmarks.products", json.dumps(spec), [])


def table(dtype: str, cells: dict[str, list[float]], cores: int) -> str:
    names = list(cells)
    flight = f"TF {cores} in-flight"
    extra = ["TF in flight/1"] if flight in cells else []
    header = ["product (batch x length, m x k x n)", *names, "TF all/1", "torch all/1", "TF/torch, all", *extra]
    lines = ["| " + " | ".join(header) + " |", "|---" + "|---:" * (len(header) - 1) + "|"]
    for i, (name, b, m, k, n) in enumerate(shapes()):
        row = [f"{name}: {'%d x ' % b if b > 1 else ''}{m} x {k} x {n}"]
        row += [f"{cells[c][i]:.0f}" for c in names]
        tf1, tfn = cells["TF 1"][i], cells[f"TF {cores}"][i]
        th1, thn = cells["torch 1"][i], cells[f"torch {cores}"][i]
        row += [f"{tfn / tf1:.2f}x", f"{thn / th1:.2f}x", f"{tfn / thn:.2f}x"]
        row += [f"{cells[flight][i] / tf1:.2f}x"] if extra else []
        lines.append("| " + " | ".join(row) + " |")
    return f"{dtype}, GFLOP/s:\n\n" + "\n".join(lines)


def record_table(cells_by_dtype: dict[str, dict[str, list[float]]], cores: int) -> str:
    """The record's compact table: per product and dtype, TensorFlow on 1 thread, on every core, one product
    per core (where measured), and PyTorch on every core, in GFLOP/s."""
    def columns(cells: dict[str, list[float]]) -> list[str]:
        flight = f"TF {cores} in-flight"
        return ["TF 1", f"TF {cores}", *([flight] if flight in cells else []), f"torch {cores}"]

    header = ["product"] + [f"{dtype} {name.replace('in-flight', 'in flight')}"
                            for dtype, cells in cells_by_dtype.items() for name in columns(cells)]
    lines = ["| " + " | ".join(header) + " |", "|---" + "|---:" * (len(header) - 1) + "|"]
    for i, (name, b, m, k, n) in enumerate(shapes()):
        row = [f"{name.replace(' (batched)', '')}: {'%d x ' % b if b > 1 else ''}{m} x {k} x {n}"]
        row += [f"{cells[c][i]:.0f}" for cells in cells_by_dtype.values() for c in columns(cells)]
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--tf-variants", default="in-flight",
                        help=f"comma-separated TensorFlow variants at every core, of {', '.join(TF_VARIANTS)}; "
                             "'default' also runs on 1 thread")
    parser.add_argument("--dtypes", default="auto", help="float32,bfloat16; auto: bfloat16 only where native")
    parser.add_argument("--no-write", action="store_true", help="print only; leave BENCHMARKS.md as it is")
    parser.add_argument("--one", help=argparse.SUPPRESS)  # a child process: one cell, printed as JSON
    args = parser.parse_args()
    if args.one:
        print(json.dumps(child(json.loads(args.one))))
        return
    from kbert.precision import has_native_bf16

    variants = [v.strip() for v in args.tf_variants.split(",") if v.strip()]
    unknown = [v for v in variants if v not in TF_VARIANTS]
    if unknown:
        parser.error(f"unknown TF variants {unknown}; choose from {', '.join(TF_VARIANTS)}")
    dtypes = (["float32", "bfloat16"] if has_native_bf16() else ["float32"]) if args.dtypes == "auto" \
        else args.dtypes.split(",")
    cores = os.cpu_count() or 1
    load = os.getloadavg()[0]
    sections, cells_by_dtype = [], {}
    for dtype in dtypes:
        cells: dict[str, list[float]] = {}
        base = {"dtype": dtype, "repeats": args.repeats}
        for threads in (1, cores):
            cells[f"TF {threads}"] = measure(base | {"framework": "tf", "threads": threads, "variant": "default"})
            cells[f"torch {threads}"] = measure(base | {"framework": "torch", "threads": threads})
        for variant in variants:
            if variant != "default":
                cells[f"TF {cores} {variant}"] = measure(base | {"framework": "tf", "threads": cores,
                                                                 "variant": variant})
        cells_by_dtype[dtype] = cells
        sections.append(table(dtype, cells, cores))
        print(sections[-1] + "\n", flush=True)
    import tensorflow as tf
    import torch

    body = (f"Command: `{command_line()}`  \nHost: {cpu_name()} (family/model {host_key()}), {cores} cores; "
            f"flags: {cpu_flags_that_matter()}; TensorFlow {tf.__version__}, torch {torch.__version__}; "
            f"load average {load:.2f} at the start, {os.getloadavg()[0]:.2f} at the end; "
            f"{time.strftime('%Y-%m-%d')}. GFLOP/s, median of {args.repeats} calls per cell.\n\n")
    print(body + "\n\n".join(sections))
    if not args.no_write:
        write_section(f"products {host_key()}", body + record_table(cells_by_dtype, cores))


if __name__ == "__main__":
    main()
