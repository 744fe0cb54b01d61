"""One serving variant of the MiniLM strings-in export per process: threads, batches in flight, oneDNN knobs.

The variants behind docs/investigations/intel-threads.md. Each run exports MiniLM (float32 and bfloat16) once
into `--workdir`, then times one pass over SST-2 dev in batches of 32 (best of 3) for the variant given:

    python -m benchmarks.studies.serving_threads kbert float32 --intra 2 --inter 2 --callers 1
    python -m benchmarks.studies.serving_threads kbert bfloat16 --intra 1 --inter 2 --callers 2 --frozen
    python -m benchmarks.studies.serving_threads torch bfloat16 --intra 1 --callers 2

`--callers` Python threads each take every n-th batch (the batches in flight); `--frozen` sets
TF_ONEDNN_ASSUME_FROZEN_WEIGHTS=1, `--caller-thread` TF_ONEDNN_THREADPOOL_USE_CALLER_THREAD=1, before
TensorFlow loads. Prints one JSON line.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import threading
import time

from benchmarks.serving import hf_pipelines, read_sst2


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("framework", choices=["kbert", "torch"])
    parser.add_argument("precision", choices=["float32", "bfloat16"])
    parser.add_argument("--intra", type=int, default=os.cpu_count())
    parser.add_argument("--inter", type=int, default=0, help="TensorFlow's inter-op threads (0: its default)")
    parser.add_argument("--callers", type=int, default=1)
    parser.add_argument("--frozen", action="store_true")
    parser.add_argument("--caller-thread", action="store_true")
    parser.add_argument("--workdir", type=pathlib.Path, default=pathlib.Path("/tmp/kbert_serving_threads"))
    args = parser.parse_args()
    if args.frozen:
        os.environ["TF_ONEDNN_ASSUME_FROZEN_WEIGHTS"] = "1"
    if args.caller_thread:
        os.environ["TF_ONEDNN_THREADPOOL_USE_CALLER_THREAD"] = "1"
    texts, _ = read_sst2("dev", 872)
    batches = [texts[i:i + 32] for i in range(0, len(texts), 32)]
    if args.framework == "torch":
        import torch

        torch.set_num_threads(args.intra)
        hf, hf_bf16 = hf_pipelines()
        fn = hf_bf16 if args.precision == "bfloat16" else hf
    else:
        import tensorflow as tf
        import tensorflow_text  # noqa: F401  (registers the ops the export uses)

        import kbert
        from kbert.export import export, load_source

        tf.config.threading.set_intra_op_parallelism_threads(args.intra)
        tf.config.threading.set_inter_op_parallelism_threads(args.inter)
        path = args.workdir / args.precision / "1"
        if not (path / "saved_model.pb").exists():
            source = load_source(kbert.pretrained.minilm_path(), sequence_length=128, encoder=True)
            export(source, path, precision=args.precision)
        serve = tf.saved_model.load(str(path)).signatures["serving_default"]
        fn = lambda batch: serve(text=tf.constant(batch))["pooled_output"].numpy()  # noqa: E731
    for batch in batches[:3]:
        fn(batch)
    best = float("inf")
    for _ in range(3):
        callers = [threading.Thread(target=lambda part: [fn(b) for b in part], args=(batches[i::args.callers],))
                   for i in range(args.callers)]
        start = time.perf_counter()
        for caller in callers:
            caller.start()
        for caller in callers:
            caller.join()
        best = min(best, time.perf_counter() - start)
    print(json.dumps({**{k: (str(v) if isinstance(v, pathlib.Path) else v) for k, v in vars(args).items()},
                      "sentences_per_s": round(len(texts) / best)}))


if __name__ == "__main__":
    main()
