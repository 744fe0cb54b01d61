"""Exported classifiers against each other: a teacher and its students (or any model directories), each exported as
a strings-in SavedModel and as a dynamic-range int8 TFLite file, timed in the same run.

    python -m benchmarks.studies.export_speed TEACHER_DIR STUDENT_DIR [...] [--rows 872] [--repeats 3]

For each model directory (a `kbert finetune` or `kbert distill` output of an SST-2 classifier): dev accuracy
through the SavedModel and through int8 TFLite, the SavedModel's throughput at batch 32 (sentences/s over the dev
rows) and int8 TFLite's latency at batch 1 (ms a sentence over the first 200 rows, one interpreter thread a
core as `kbert predict` runs it), and each ratio to the first directory's. Best of `--repeats` passes, the
models interleaved within each pass, so that a change of load touches all alike.
"""

from __future__ import annotations

import argparse
import os
import pathlib
import tempfile

import numpy as np

from benchmarks.common.report import host_line, load_average
from benchmarks.serving import _dir_size, batches, read_sst2, time_interleaved


def exported(model_dir: pathlib.Path, work: pathlib.Path) -> dict:
    """The SavedModel signature and the int8 LiteRT interpreter of one model directory, with their sizes."""
    import tensorflow as tf

    from kbert.export import export, load_source, tflite_convert
    from kbert.export import tflite as tflite_lib

    source = load_source(model_dir)
    saved = export(source, work / model_dir.name / "1")
    int8 = tflite_convert.convert(source, quantize="dynamic")
    return {"signature": tf.saved_model.load(str(saved)).signatures["serving_default"],
            "interpreter": tflite_lib.interpreter(int8, num_threads=os.cpu_count()),
            "saved_mb": _dir_size(saved) / 1e6, "int8_mb": len(int8) / 1e6,
            "layers": source.model.encoder.bert_config.num_hidden_layers,
            "parameters": source.model.count_params()}


def measure(model_dirs: list[pathlib.Path], rows: int, repeats: int) -> str:
    import tensorflow as tf

    from kbert.export import tflite as tflite_lib

    texts, labels = read_sst2("dev", rows)
    with tempfile.TemporaryDirectory() as scratch:
        models = {d.name: exported(d, pathlib.Path(scratch)) for d in model_dirs}
        saved_runners = {name: (lambda fn: lambda b: fn(text=tf.constant(b)))(m["signature"])
                         for name, m in models.items()}
        lite_runners = {name: (lambda it: lambda b: tflite_lib.run(it, {"text": b}))(m["interpreter"])
                        for name, m in models.items()}
        for name, m in models.items():
            saved = np.concatenate([saved_runners[name](b)["label_id"].numpy() for b in batches(texts, 32)])
            lite = np.array([lite_runners[name]([t])["label_id"][0] for t in texts])
            m["saved_accuracy"] = 100 * float(np.mean(saved == np.array(labels)))
            m["int8_accuracy"] = 100 * float(np.mean(lite == np.array(labels)))
        saved_seconds = time_interleaved(saved_runners, batches(texts, 32), repeats)
        one = [[t] for t in texts[:200]]
        lite_seconds = time_interleaved(lite_runners, one, repeats)
    first = next(iter(models))
    lines = ["| model | layers | parameters | dev acc. SavedModel / int8 | SavedModel batch 32, sentences/s | "
             "speed-up | int8 TFLite batch 1, ms | speed-up | sizes SavedModel / int8 |",
             "|---|---:|---:|---|---:|---:|---:|---:|---|"]
    for name, m in models.items():
        rate = len(texts) / saved_seconds[name]
        ms = 1000 * lite_seconds[name] / len(one)
        lines.append(f"| {name} | {m['layers']} | {m['parameters'] / 1e6:.1f}M | {m['saved_accuracy']:.2f} / "
                     f"{m['int8_accuracy']:.2f} | {rate:.0f} | {saved_seconds[first] / saved_seconds[name]:.2f}x | "
                     f"{ms:.2f} | {lite_seconds[first] / lite_seconds[name]:.2f}x | {m['saved_mb']:.1f} MB / "
                     f"{m['int8_mb']:.1f} MB |")
    return (f"SST-2 dev, {len(texts)} rows (batch-1 timing on the first {len(one)}), best of {repeats} passes, "
            f"float32 SavedModels.\nHost: {host_line()}; load average at the end {load_average()}.\n\n"
            + "\n".join(lines))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model_dirs", type=pathlib.Path, nargs="+", help="model directories; the first is the "
                                                                          "reference of the ratios")
    parser.add_argument("--rows", type=int, default=872, help="SST-2 dev rows")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    print(measure(args.model_dirs, args.rows, args.repeats))


if __name__ == "__main__":
    main()
