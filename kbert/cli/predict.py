"""`kbert predict EXPORT "text" ...`: run a kbert SavedModel export or `.tflite` file, one JSON line each."""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any, Iterator

import numpy as np

from kbert.cli.main import UsageError

INPUT_KEYS = ("text", "text_pair", "question", "context")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("export",
                        help="a kbert export directory (SavedModel) or a .tflite file (e.g. EXPORT/model.tflite)")
    parser.add_argument("texts", nargs="*", help="texts; for QA, alternate question and context")
    parser.add_argument("--input", default=None,
                        help='JSON lines with "text" (and "text_pair"), or "question" and "context"')
    parser.add_argument("--signature", default="serving_default", help="signature to run")


def read_inputs(args: argparse.Namespace, input_names: list[str]) -> list[dict[str, str]]:
    rows: list[dict[str, str]] = []
    if args.input is not None:
        import kbert.file_io as file_io
        from kbert.tasks.readers.local_files import jsonl_rows

        if not file_io.isfile(args.input):
            raise FileNotFoundError(f"input file not found: {args.input}")
        for number, row in jsonl_rows(args.input):
            missing = [n for n in input_names if n not in row]
            if missing:
                raise ValueError(f"{args.input}:{number}: missing field(s) {', '.join(missing)}")
            rows.append({n: str(row[n]) for n in input_names})
    texts = list(args.texts)
    if len(input_names) == 2:
        if len(texts) % 2:
            raise ValueError(f"this signature takes {input_names}: give the texts in pairs")
        rows += [dict(zip(input_names, texts[i:i + 2])) for i in range(0, len(texts), 2)]
    else:
        rows += [{input_names[0]: t} for t in texts]
    return rows


def rows_of(outputs: dict[str, Any], n: int) -> Iterator[dict[str, Any]]:
    """Splits batched outputs into one JSON-able dict per input, dropping -1 / "" padding columns."""
    arrays = {k: np.asarray(v) for k, v in outputs.items()}
    for i in range(n):
        row = {}
        for key, value in arrays.items():
            row[key] = _jsonable(value[i])
        for prefix in ("word", "entity"):
            count = row.get(f"num_{prefix}s")
            if count is not None:
                for key in row:
                    if key.startswith(prefix + "_") and isinstance(row[key], list):
                        row[key] = row[key][:count]
        yield row


def _jsonable(value):
    if isinstance(value, np.ndarray):
        return [_jsonable(v) for v in value]
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    if isinstance(value, np.generic):
        return value.item()
    return value


def run(args: argparse.Namespace) -> int:
    if os.path.splitext(args.export)[1] == ".tflite":
        from kbert.export import tflite

        interp = tflite.interpreter(args.export)
        signatures = interp.get_signature_list()
        _check_signature(args.signature, signatures)
        names = list(signatures[args.signature]["inputs"])
        # Signature inputs in call order: question before context, text before text_pair.
        names.sort(key=lambda n: INPUT_KEYS.index(n) if n in INPUT_KEYS else 9)
        rows = read_inputs(args, names)
        print("precision: float32 (TFLite)", file=sys.stderr)
        outputs = tflite.run(interp, {n: [r[n] for r in rows] for n in names}, args.signature)
    else:
        import tensorflow as tf
        import tensorflow_text  # noqa: F401  (registers the ops the export uses)

        import kbert.file_io as file_io

        if not file_io.isfile(file_io.join(args.export, "saved_model.pb")):
            raise FileNotFoundError(f"{args.export} is not a SavedModel directory (no saved_model.pb)")
        loaded = tf.saved_model.load(args.export)
        _print_precision(args.export)
        _check_signature(args.signature, loaded.signatures)
        fn = loaded.signatures[args.signature]
        names = sorted(fn.structured_input_signature[1], key=lambda n: INPUT_KEYS.index(n)
                       if n in INPUT_KEYS else 9)
        rows = read_inputs(args, names)
        outputs = {k: v.numpy() for k, v in fn(**{n: tf.constant([r[n] for r in rows], tf.string)
                                                   for n in names}).items()}
    for row in rows_of(outputs, len(rows)):
        print(json.dumps(row, ensure_ascii=False, sort_keys=True))
    return 0


def _print_precision(export: str) -> None:
    """Prints the export's precision (its config file's `precision`; float32 before it was recorded) on
    stderr, and the warning when it is bfloat16 and this CPU has no native bfloat16."""
    import tensorflow as tf

    from kbert.precision import bf16_warning

    path = f"{export}/assets/kbert_export.json"
    config = {}
    if tf.io.gfile.exists(path):
        with tf.io.gfile.GFile(path) as f:
            config = json.loads(f.read())
    precision = config.get("precision", "float32")
    print(f"precision: {precision}", file=sys.stderr)
    message = bf16_warning() if precision == "bfloat16" else None
    if message:
        print(f"warning: {message}", file=sys.stderr)


def _check_signature(name: str, signatures: Any) -> None:
    if name not in signatures:
        raise UsageError(f"no signature {name!r}; the export has {sorted(signatures)}")
