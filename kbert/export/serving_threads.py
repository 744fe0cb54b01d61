"""How a serving process spends its CPU cores: one batch per core, and weights prepared once.

TensorFlow splits each product across its thread pool. On short products (a batch of 32 short sentences,
the attention's many small products) handing the halves to the pool costs about as much as it saves:
on a 2-core Intel Xeon the strings-in SavedModel ran 1.21x (float32) and 1.54x (bfloat16) faster with two
batches in flight, each on one thread, than with one batch split across both cores. oneDNN also lays out
each weight matrix for its kernel on every call unless told that the weights never change
(`TF_ONEDNN_ASSUME_FROZEN_WEIGHTS`); for bfloat16 on AMX that was another 1.38x. The story and the
figures: docs/investigations/intel-threads.md.

Both settings are for processes that only serve. The environment variable makes oneDNN keep the first
layout of every weight it sees, so a process that also trains would keep multiplying by stale weights:
`kbert predict` applies it only as a command of its own (a fresh process that ends after answering), and
the TF Serving kit (export/docker_run.sh) passes it to the server.

This module imports no TensorFlow, so a command can set the environment before TensorFlow loads.

    >>> batches(5, batch_size=2, workers=2)
    [range(0, 1), range(1, 3), range(3, 5)]
    >>> batches(3, batch_size=32, workers=2)
    [range(0, 1), range(1, 3)]
    >>> run_in_flight(lambda rows: [r * 10 for r in rows], batches(5, 2, 2), workers=2)
    [[0], [10, 20], [30, 40]]
"""

from __future__ import annotations

import os
from collections.abc import Callable, MutableMapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

# Read once by TensorFlow's oneDNN kernels, before the first product: set before TensorFlow runs anything.
SERVING_ENVIRONMENT = {"TF_ONEDNN_ASSUME_FROZEN_WEIGHTS": "1"}

T = TypeVar("T")


def cores() -> int:
    """The CPU cores this process may run on (its affinity where the OS tells it, else the machine's)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def apply_serving_environment(environ: MutableMapping[str, str] | None = None) -> dict[str, str]:
    """Sets `SERVING_ENVIRONMENT` in `environ` (default: this process's), keeping what the user set.

    Returns:
        The values now in force, by name.
    """
    environ = os.environ if environ is None else environ
    return {name: environ.setdefault(name, value) for name, value in SERVING_ENVIRONMENT.items()}


def configure_serving_threads(workers: int) -> None:
    """One thread per product and `workers` products at once: TensorFlow's intra-op pool of 1 thread and an
    inter-op pool of `workers`. Call it before TensorFlow runs its first op (it raises RuntimeError after)."""
    import tensorflow as tf

    tf.config.threading.set_intra_op_parallelism_threads(1)
    tf.config.threading.set_inter_op_parallelism_threads(max(1, workers))


def batches(rows: int, batch_size: int, workers: int) -> list[range]:
    """The row ranges to run: batches of at most `batch_size`, and at least one per worker where there are
    rows enough, so that every core gets work (3 rows on 2 workers: 1 + 2)."""
    if batch_size < 1:
        raise ValueError(f"batch size must be at least 1, got {batch_size}")
    count = max(-(-rows // batch_size), min(rows, max(1, workers)))
    bounds = [rows * i // count for i in range(count + 1)] if rows else [0]
    return [range(start, stop) for start, stop in zip(bounds, bounds[1:])]


def run_in_flight(fn: Callable[[range], T], ranges: Sequence[range], workers: int) -> list[T]:
    """`[fn(r) for r in ranges]`, computed `workers` at a time on threads, in the order of `ranges`.

    TensorFlow releases Python's lock while a signature runs, so the calls overlap.
    """
    if workers <= 1 or len(ranges) <= 1:
        return [fn(r) for r in ranges]
    with ThreadPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(fn, ranges))
