"""Runs `.tflite` files with TensorFlow select ops under a TensorFlow whose `tf.lite.Interpreter` links the Flex
delegate (2.18 and earlier; kbert's own stack has none): the LiteRT side of `tflite_record --flex-python`, and of
`tests/export/test_select_tf_ops.py`. It imports TensorFlow, NumPy and tensorflow-text where installed (no kbert),
so that other Python runs it.

    PYTHON -m benchmarks.studies.flex_timing REQUEST.json

Timing, REQUEST.json: {"file": PATH, "inputs": {NAME: [texts]}, "timed": N, "repeats": R, "threads": T,
"out": NPZ}. NPZ gets each output of every text run one a call (row i of output K at "K/i"), and
"median_seconds": the best over R passes of the median time of one call over the first N texts.

Answers, REQUEST.json: {"runs": {NAME: {"file": PATH, "inputs": {INPUT: [base64 of the bytes]}}}, "out": DIR}.
Every signature of a run's file whose inputs the run gives runs on them; DIR/NAME.SIGNATURE.npz holds its outputs.
"""

import base64
import json
import pathlib
import sys
import time

import numpy as np
import tensorflow as tf
from tensorflow.lite.python.interpreter import InterpreterWithCustomOps

try:  # tensorflow-text's ops: its TensorFlow kernels (ALBERT's SentencepieceOp, which the Flex delegate finds once
    # they are loaded in the process) and its TFLite kernels (FastSentencepieceTokenize, ...)
    import tensorflow_text

    REGISTERERS = tensorflow_text.tflite_registrar.SELECT_TFTEXT_OPS
except ImportError:
    REGISTERERS = []


def interpreter(path: str, threads: int | None = None) -> tf.lite.Interpreter:
    return InterpreterWithCustomOps(custom_op_registerers=REGISTERERS, model_path=path, num_threads=threads)


def answers(request: dict) -> None:
    """Every signature of every run, on the inputs it names (see the module's docstring)."""
    out = pathlib.Path(request["out"])
    for name, run in request["runs"].items():
        inputs = {key: np.array([base64.b64decode(x) for x in values], dtype=object)
                  for key, values in run["inputs"].items()}
        lite = interpreter(run["file"])
        for signature, spec in lite.get_signature_list().items():
            if not set(spec["inputs"]) <= set(inputs):
                continue
            runner = lite.get_signature_runner(signature)
            np.savez(out / f"{name}.{signature}.npz", **runner(**{key: inputs[key] for key in spec["inputs"]}))


def timing(request: dict) -> None:
    """`serving_default` one text a call: its answers and the median seconds (see the module's docstring)."""
    runner = interpreter(request["file"], request["threads"]).get_signature_runner("serving_default")
    inputs = request["inputs"]
    rows = len(next(iter(inputs.values())))
    calls = [{k: np.array(v[i:i + 1], dtype=object) for k, v in inputs.items()} for i in range(rows)]
    saved = {}
    for i, call in enumerate(calls):
        for key, value in runner(**call).items():
            saved[f"{key}/{i}"] = value
    best = float("inf")
    for _ in range(request["repeats"]):
        seconds = []
        for call in calls[:request["timed"]]:
            began = time.perf_counter()
            runner(**call)
            seconds.append(time.perf_counter() - began)
        best = min(best, float(np.median(seconds)))
    np.savez(request["out"], median_seconds=best, **saved)


def main(request_path: str) -> None:
    request = json.loads(pathlib.Path(request_path).read_text(encoding="utf-8"))
    if "runs" in request:
        answers(request)
    else:
        timing(request)


if __name__ == "__main__":
    main(sys.argv[1])
