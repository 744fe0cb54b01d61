"""One loaded SavedModel answering 16 threads of mixed-length requests: same answers as alone, no error.

    python -m tests.export.load_harness [--seconds 60] [--threads 16] [--requests 48] [--out load.json]

Builds an all-MiniLM-L6-v2 classifier (real encoder weights, a seeded random 2-class head) with
`kbert.save_model` and `kbert export` at sequence length 128, loads it once with `tf.saved_model.load`,
and makes `--requests` requests of 1-64 texts each, every text a slice of SST-2 dev sentences (or of
vocabulary words when the data is absent) from 3 words to past the sequence limit. Each request is
first answered alone, one after another; then `--threads` threads send requests drawn at random for
`--seconds`, and every answer is compared with the one given alone. Requests in flight at the deadline
are finished and counted, so the concurrent run's seconds can exceed `--seconds` by one request.

Identical means bitwise equal, every output (probabilities, label ids, labels). A request runs the same
kernels on the same shapes with the same thread pool whether it comes alone or among others, so a
correct server reproduces the bits; a tolerance would only hide state leaking between concurrent calls
(a shared buffer, a race on a lookup table), which is what this checks. The largest absolute difference
is reported too, so a failure says how far apart the answers were.
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import json
import os
import pathlib
import sys
import tempfile
import threading
import time
from typing import Callable

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np

from tests.export.serving_runtimes import SavedModelRuntime, as_batch, export_model

SST2_DEV = pathlib.Path(__file__).resolve().parents[2] / "shared" / "data" / "sst2" / "dev.tsv"
Answer = dict[str, np.ndarray]


def word_stream(vocabulary: list[str]) -> list[str]:
    """SST-2 dev sentences as one stream of words, or the vocabulary's whole words without the data."""
    if SST2_DEV.is_file():
        with open(SST2_DEV, encoding="utf-8") as f:
            return [w for row in csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE)
                    for w in row["sentence"].split()]
    return [t for t in vocabulary if t.isalpha() and not t.startswith("[")]


def make_requests(words: list[str], count: int, seed: int, max_texts: int = 64,
                  max_words: int = 140) -> list[np.ndarray]:
    """`count` requests of 1-`max_texts` texts, each text 3-`max_words` consecutive words of `words`."""
    rng = np.random.default_rng(seed)
    requests = []
    for _ in range(count):
        texts = []
        for _ in range(int(rng.integers(1, max_texts + 1))):
            n = int(rng.integers(3, max_words + 1))
            start = int(rng.integers(0, max(1, len(words) - n)))
            texts.append(" ".join(words[start:start + n]))
        requests.append(as_batch(texts))
    return requests


def differences(got: Answer, want: Answer) -> tuple[bool, float]:
    """(bitwise equal on every output, largest absolute difference of the numeric outputs)."""
    same, largest = got.keys() == want.keys(), 0.0
    for key in want.keys() & got.keys():
        a, b = got[key], want[key]
        if a.shape != b.shape or not np.array_equal(a, b):
            same = False
        if a.shape == b.shape and a.dtype.kind in "fiu" and a.size:
            largest = max(largest, float(np.abs(a.astype(np.float64) - b.astype(np.float64)).max()))
    return same, largest


@dataclasses.dataclass
class LoadResult:
    """What the threads did: answers, texts, errors, differing answers and latencies (seconds)."""

    threads: int
    seconds: float = 0.0
    requests: int = 0
    texts: int = 0
    errors: list[str] = dataclasses.field(default_factory=list)
    differing: int = 0
    max_abs_difference: float = 0.0
    latencies: list[float] = dataclasses.field(default_factory=list)

    def figures(self) -> dict[str, float]:
        """Counts, throughput (requests/s, texts/s) and p50/p99 latency in milliseconds."""
        lat = np.asarray(self.latencies or [np.nan]) * 1000
        return {"threads": self.threads, "seconds": round(self.seconds, 2), "requests": self.requests,
                "texts": self.texts, "errors": len(self.errors), "differing_answers": self.differing,
                "max_abs_difference": self.max_abs_difference,
                "requests_per_s": round(self.requests / self.seconds, 2) if self.seconds else 0.0,
                "texts_per_s": round(self.texts / self.seconds, 1) if self.seconds else 0.0,
                "p50_ms": round(float(np.percentile(lat, 50)), 1),
                "p99_ms": round(float(np.percentile(lat, 99)), 1)}


def answer_alone(call: Callable[[np.ndarray], Answer],
                 requests: list[np.ndarray]) -> tuple[list[Answer], LoadResult]:
    """Each request answered on its own, one after another: the reference, and its timing."""
    result, answers = LoadResult(threads=1), []
    start = time.perf_counter()
    for request in requests:
        t = time.perf_counter()
        answers.append(call(request))
        result.latencies.append(time.perf_counter() - t)
        result.requests += 1
        result.texts += len(request)
    result.seconds = time.perf_counter() - start
    return answers, result


def hammer(call: Callable[[np.ndarray], Answer], requests: list[np.ndarray], reference: list[Answer],
           threads: int = 16, seconds: float | None = None, per_thread: int | None = None,
           seed: int = 0) -> LoadResult:
    """`threads` threads calling at once, each until `seconds` pass or after `per_thread` requests.

    Every answer is compared with `reference` (the same request answered alone); exceptions are
    recorded, not raised. All threads start together, behind a barrier.
    """
    if (seconds is None) == (per_thread is None):
        raise ValueError("give exactly one of seconds and per_thread")
    result = LoadResult(threads=threads)
    lock, barrier = threading.Lock(), threading.Barrier(threads + 1)
    deadline: list[float] = []

    def worker(index: int) -> None:
        rng = np.random.default_rng([seed, index])
        barrier.wait()
        done = 0
        while (per_thread is not None and done < per_thread) or (seconds is not None
                                                                  and time.perf_counter() < deadline[0]):
            i = int(rng.integers(len(requests)))
            t = time.perf_counter()
            try:
                got = call(requests[i])
            except Exception as e:  # an error is a finding; keep serving the other requests
                with lock:
                    result.errors.append(f"request {i}: {type(e).__name__}: {e}"[:500])
                done += 1
                continue
            latency = time.perf_counter() - t
            same, largest = differences(got, reference[i])
            with lock:
                result.latencies.append(latency)
                result.requests += 1
                result.texts += len(requests[i])
                result.differing += not same
                result.max_abs_difference = max(result.max_abs_difference, largest)
            done += 1

    workers = [threading.Thread(target=worker, args=(k,), daemon=True) for k in range(threads)]
    for w in workers:
        w.start()
    start = time.perf_counter()
    deadline.append(start + (seconds or 0.0))
    barrier.wait()
    for w in workers:
        w.join()
    result.seconds = time.perf_counter() - start
    return result


def build_minilm_export(root: pathlib.Path, sequence_length: int = 128,
                        seed: int = 0) -> tuple[pathlib.Path, list[str]]:
    """An all-MiniLM-L6-v2 2-class classifier export (SavedModel only) and its vocabulary."""
    import keras

    import kbert

    path = kbert.pretrained.minilm_path()
    tokenizer = kbert.load_tokenizer(path)
    keras.utils.set_random_seed(seed)
    model = kbert.BertClassifier(kbert.load_pretrained(path), 2)
    task = kbert.ClassificationTask(labels=["negative", "positive"])
    return export_model(model, tokenizer, root, sequence_length, task, tflite=False), tokenizer.get_vocabulary()


def markdown(alone: LoadResult, loaded: LoadResult) -> str:
    """The two runs' figures as one markdown table."""
    keys = ["threads", "seconds", "requests", "texts", "requests_per_s", "texts_per_s", "p50_ms", "p99_ms",
            "errors", "differing_answers"]
    rows = [alone.figures(), loaded.figures()]
    lines = ["| " + " | ".join(["run"] + keys) + " |", "|" + "---|" * (len(keys) + 1)]
    for name, row in zip(("alone (reference)", "concurrent"), rows):
        lines.append("| " + " | ".join([name] + [str(row[k]) for k in keys]) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Builds the export, answers the requests alone, then under load; 1 on any error or difference."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=60.0, help="how long the threads send requests")
    parser.add_argument("--threads", type=int, default=16)
    parser.add_argument("--requests", type=int, default=48, help="distinct requests, answered alone first")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=pathlib.Path, default=None, help="write the figures as JSON here")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        export, vocabulary = build_minilm_export(pathlib.Path(tmp))
        runtime = SavedModelRuntime(export)

        def call(texts: np.ndarray) -> Answer:
            return runtime("serving_default", text=texts)

        requests = make_requests(word_stream(vocabulary), args.requests, args.seed)
        call(requests[0])  # trace and warm up outside the timings
        load_before = os.getloadavg()
        reference, alone = answer_alone(call, requests)
        loaded = hammer(call, requests, reference, threads=args.threads, seconds=args.seconds, seed=args.seed)
        load_after = os.getloadavg()
    print(markdown(alone, loaded))
    for line in loaded.errors[:20]:
        print(f"error: {line}")
    report = {"alone": alone.figures(), "concurrent": loaded.figures(), "cpu_count": os.cpu_count(),
              "loadavg_before": load_before, "loadavg_after": load_after, "errors": loaded.errors[:100],
              "identical": "bitwise equal to the same request answered alone"}
    print(json.dumps(report))
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return 0 if not loaded.errors and not loaded.differing and loaded.requests else 1


if __name__ == "__main__":
    sys.exit(main())
