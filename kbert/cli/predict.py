"""`kbert predict EXPORT "text" ...`: run a kbert SavedModel export or `.tflite` file, one JSON line each.

The export's config file (`assets/kbert_export.json`, `kbert.export.export_config`) says, per signature,
the order of its inputs (positional texts fill them in turn) and which outputs are padded per row past a
count output (each row is cut to its count). A `.tflite` file reads the config of the export directory it
sits in. Without one (a lone `.tflite` file, or an export written before the config named the inputs), a
one-input signature takes texts as before, and a signature of several inputs takes them by name with
`--input`.

A SavedModel answers in batches of `--batch-size`, one batch per CPU core at a time (at least one batch per
core where there are texts enough), each of rows of similar length (`kbert.length_batches`: a batch pads
little), printed in the input's order. As a command of its own, `kbert predict` also runs each product on one
thread and lets oneDNN lay out the export's weights once (`kbert.export.serving_threads`); called inside a
Python process (`main([...])`), it leaves that process's threads and environment as they are.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
from typing import Any, Iterator, Sequence

import numpy as np

from kbert.cli.flags import add_dataclass_flags, collect
from kbert.cli.main import UsageError
from kbert.length_batches import longest_first


@dataclasses.dataclass
class PredictSettings:
    """The settings of `kbert predict`, one flag each.

    Args:
        export: str. A kbert export directory (SavedModel) or a .tflite file.
        texts: list of str. Texts; for a signature of several inputs, one of each in turn.
        input: str or None. JSON lines with one field per signature input.
        signature: str. The signature to run.
        batch_size: int. Texts per call of a SavedModel.
        workers: int or None. SavedModel batches run at once; None: one per CPU core.

    Example:
        >>> PredictSettings("export/models/sst2/1", ["A charming film."]).signature
        'serving_default'
    """

    export: str = dataclasses.field(metadata={
        "positional": True,
        "help": "a kbert export directory (SavedModel) or a .tflite file (e.g. EXPORT/model.tflite)"})
    texts: list[str] = dataclasses.field(default_factory=list, metadata={
        "positional": True, "nargs": "*",
        "help": "texts; for a signature of several inputs, one of each in turn, in the order the export's "
                "assets/kbert_export.json gives"})
    input: str | None = dataclasses.field(default=None, metadata={
        "help": "JSON lines with one field per signature input (e.g. \"text\" and \"text_pair\")"})
    signature: str = dataclasses.field(default="serving_default", metadata={"help": "signature to run"})
    batch_size: int = dataclasses.field(default=32, metadata={
        "help": "texts per call of a SavedModel"})
    workers: int | None = dataclasses.field(default=None, metadata={
        "help": "SavedModel batches run at once (default: one per CPU core)"})


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Adds the command's flags, one per field of `PredictSettings`."""
    add_dataclass_flags(parser, PredictSettings)


def input_order(config: dict[str, Any], signature: str, names: Sequence[str], positional: bool) -> list[str]:
    """The signature's input names in call order, from the export's config.

    Args:
        config: the export's config (`{}` when it has none).
        signature: the signature's name.
        names: its input names, as the model lists them.
        positional: texts are given on the command line (they need the order).

    Raises:
        UsageError: the config disagrees with the model, or several inputs have no recorded order and
            texts are given positionally.
    """
    from kbert.export.export_config import signature_spec

    spec = signature_spec(config, signature)
    if spec is not None:
        declared = [str(n) for n in spec.get("inputs", [])]
        if sorted(declared) != sorted(names):
            raise UsageError(f"the export's config gives signature {signature!r} the inputs {declared}, but the "
                             f"model takes {sorted(names)}")
        return declared
    if len(names) > 1 and positional:
        raise UsageError(f"signature {signature!r} takes {', '.join(sorted(names))}, and the export records no "
                         f"order for them (no assets/kbert_export.json naming its inputs): give them by name, as "
                         f"JSON lines with --input")
    return sorted(names)


def output_trims(config: dict[str, Any], signature: str, outputs: Sequence[str]) -> dict[str, list[str]]:
    """`{count output: [outputs padded past it]}` of a signature, from the export's config.

    An export without it (written before the config recorded it) followed one naming convention, used
    here: `num_<names>` counts the rows of the outputs named `<name>_...` (a tagger's `num_words` ->
    `word_...`, `num_entities` -> `entity_...`).
    """
    from kbert.export.export_config import signature_spec

    spec = signature_spec(config, signature)
    if spec is not None:
        return {str(count): [str(o) for o in padded] for count, padded in spec.get("trim", {}).items()}
    trims = {}
    for count in outputs:
        plural = count[len("num_"):] if count.startswith("num_") else ""
        if plural.endswith("s"):
            trims[count] = [o for o in outputs if o.startswith(_singular(plural) + "_")]
    return trims


def _singular(plural: str) -> str:
    """`words` -> `word`, `entities` -> `entity`: the plurals of kbert's count outputs."""
    return plural[:-3] + "y" if plural.endswith("ies") else plural[:-1]


def read_inputs(settings: PredictSettings, input_names: list[str]) -> list[dict[str, str]]:
    """One `{input name: text}` per example: the JSON lines of `settings.input`, then the positional texts."""
    rows: list[dict[str, str]] = []
    if settings.input is not None:
        import kbert.file_io as file_io
        from kbert.tasks.readers.local_files import jsonl_rows

        if not file_io.isfile(settings.input):
            raise FileNotFoundError(f"input file not found: {settings.input}")
        for number, row in jsonl_rows(settings.input):
            missing = [n for n in input_names if n not in row]
            if missing:
                raise ValueError(f"{settings.input}:{number}: missing field(s) {', '.join(missing)}")
            rows.append({n: str(row[n]) for n in input_names})
    texts = list(settings.texts)
    width = len(input_names)
    if len(texts) % width:
        raise ValueError(f"this signature takes {', '.join(input_names)}: give the texts in groups of {width}, "
                         f"in that order")
    rows += [dict(zip(input_names, texts[i:i + width])) for i in range(0, len(texts), width)]
    return rows


def rows_of(outputs: dict[str, Any], n: int, trims: dict[str, list[str]] | None = None) -> Iterator[dict[str, Any]]:
    """Splits batched outputs into one JSON-able dict per input, cutting each `trims` output of a row to the
    row's count (the padding past it dropped)."""
    arrays = {k: np.asarray(v) for k, v in outputs.items()}
    for i in range(n):
        row = {key: _jsonable(value[i]) for key, value in arrays.items()}
        for count, padded in (trims or {}).items():
            if isinstance(row.get(count), int):
                for key in padded:
                    if isinstance(row.get(key), list):
                        row[key] = row[key][:row[count]]
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
    """Runs the export on the given inputs and prints one JSON line per input."""
    from kbert.export.export_config import TFLITE_SUFFIX, read_export_config

    settings = PredictSettings(**collect(args, PredictSettings))
    signature, positional = settings.signature, bool(settings.texts)
    for flag, value in (("--batch-size", settings.batch_size), ("--workers", settings.workers)):
        if value is not None and value < 1:
            raise UsageError(f"{flag} must be at least 1, got {value}")
    if os.path.splitext(settings.export)[1] == TFLITE_SUFFIX:
        from kbert.export import tflite

        interp = tflite.interpreter(settings.export)
        config = read_export_config(settings.export)
        signatures = interp.get_signature_list()
        _check_signature(signature, signatures)
        names = input_order(config, signature, list(signatures[signature]["inputs"]), positional)
        trims = output_trims(config, signature, list(signatures[signature]["outputs"]))
        rows = read_inputs(settings, names)
        print("precision: float32 (TFLite)", file=sys.stderr)
        outputs = tflite.run(interp, {n: [r[n] for r in rows] for n in names}, signature)
        answers = list(rows_of(outputs, len(rows), trims))
    else:
        from kbert.export import serving_threads

        workers = settings.workers or serving_threads.cores()
        if getattr(args, "own_process", False):  # a process that only serves: see serving_threads
            serving_threads.apply_serving_environment()
            serving_threads.configure_serving_threads(workers)
        import tensorflow as tf
        import tensorflow_text  # noqa: F401  (registers the ops the export uses)

        import kbert.file_io as file_io

        if not file_io.isfile(file_io.join(settings.export, "saved_model.pb")):
            raise FileNotFoundError(f"{settings.export} is not a SavedModel directory (no saved_model.pb)")
        loaded = tf.saved_model.load(settings.export)
        config = read_export_config(settings.export)
        _print_precision(config)
        _check_signature(signature, loaded.signatures)
        fn = loaded.signatures[signature]
        names = input_order(config, signature, list(fn.structured_input_signature[1]), positional)
        trims = output_trims(config, signature, list(fn.structured_outputs))
        rows = read_inputs(settings, names)

        # Rows of similar length run together (longest first within windows of batches); answers in input order.
        order = [i for batch in longest_first([sum(len(row[n]) for n in names) for row in rows], settings.batch_size)
                 for i in batch]

        def answer(part: range) -> list[dict[str, Any]]:
            outputs = fn(**{n: tf.constant([rows[order[i]][n] for i in part], tf.string) for n in names})
            return list(rows_of({k: v.numpy() for k, v in outputs.items()}, len(part), trims))

        parts = serving_threads.batches(len(rows), settings.batch_size, workers)
        answers = [{}] * len(rows)
        for position, row in enumerate(r for part in serving_threads.run_in_flight(answer, parts, workers) for r in part):
            answers[order[position]] = row
    for row in answers:
        print(json.dumps(row, ensure_ascii=False, sort_keys=True))
    return 0


def _print_precision(config: dict[str, Any]) -> None:
    """Prints the export's precision (its config's `precision`; float32 before it was recorded) on stderr,
    and the warning when it is bfloat16 and this CPU has no native bfloat16."""
    from kbert.precision import bf16_warning

    precision = config.get("precision", "float32")
    print(f"precision: {precision}", file=sys.stderr)
    message = bf16_warning() if precision == "bfloat16" else None
    if message:
        print(f"warning: {message}", file=sys.stderr)


def _check_signature(name: str, signatures: Any) -> None:
    if name not in signatures:
        raise UsageError(f"no signature {name!r}; the export has {sorted(signatures)}")
