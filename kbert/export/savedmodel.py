"""Writing a kbert export: a strings-in SavedModel (TF Serving version directory), its warmup and TFLite.

    OUT/saved_model.pb, OUT/variables/        the graph and each weight once
    OUT/assets/vocab.txt, labels.txt, kbert_export.json   vocabulary, labels and config (relative); the
                                              vocabulary files are the tokenizer's own (`save_vocabulary`:
                                              vocab.txt, or vocab.json + merges.txt) with its
                                              tokenizer_config.json, so `load_tokenizer(OUT/assets)` reloads it
    OUT/assets.extra/tf_serving_warmup_requests        PredictionLog records, one per signature
    OUT/model.tflite                          with --tflite (TF Serving ignores it)
    OUT/model.mediapipe.tflite                with --mediapipe: for MediaPipe Tasks' TextClassifier or
                                              TextEmbedder (`kbert.export.mediapipe_convert`)

The config file (`kbert.export.export_config`) records what the task declares for each signature: its
inputs in call order, its outputs and the padded outputs a count trims; `kbert predict` reads them there.
The warmup requests are the task's `example_requests` for each signature's inputs.

OUT may be `export/models/NAME/VERSION`: everything is written to a hidden temporary directory beside OUT
and renamed into place at the end, so a server polling NAME/ never sees a half-written version. OUT may be
a URL (gs://...): an object store has no directory rename, so there the files are renamed one by one
(`kbert.file_io.move_dir`); each file appears whole, but a poller may see some files before others.
"""

from __future__ import annotations

import dataclasses
import os
import warnings
from typing import Any, Sequence

import numpy as np
import tensorflow as tf

import kbert.file_io as file_io
from kbert.export import mediapipe_convert, tflite_convert
from kbert.export.export_config import CONFIG_FILE

TOKENIZER_CONFIG = "tokenizer_config.json"  # written by every tokenizer's `save_vocabulary`
from kbert.export.export_source import ExportSource, build_module, load_source
from kbert.export.serving_module import ServingModule
from kbert.precision import PrecisionWarning, bf16_warning, check_quantize, resolve_precision
from kbert.tasks.base import Task

WARMUP_FILE = "tf_serving_warmup_requests"
TFLITE_FILE = "model.tflite"


def export(source: ExportSource | str | os.PathLike, out: str | os.PathLike, tflite: bool = False,
           quantize: str = "none", sequence_length: int | None = None, force: bool = False,
           precision: str = "float32", mediapipe: bool = False, select_tf_ops: bool = False,
           _before_rename=None) -> str | os.PathLike:
    """Writes the SavedModel (and optionally `model.tflite` inside it) atomically at `out`.

    Args:
        source: an `ExportSource` or a model / checkpoint directory (see `load_source`).
        out: the export directory, e.g. `export/models/sst2/1`. Must not exist unless `force`.
        tflite: also write `out/model.tflite`.
        quantize: "none", "dynamic" (int8 weights) or "float16", for the TFLite file.
        sequence_length: overrides the packing length.
        force: replace an existing `out`.
        precision: "float32", "bfloat16" or "auto" (`kbert.precision.resolve_precision`: bfloat16 where this
            CPU has native bfloat16): the SavedModel's encoder computes in this precision (Keras'
            mixed bfloat16 policy, `kbert.export.model_precision`); recorded as `precision` in
            `assets/kbert_export.json`. TFLite has no bfloat16 kernels, so `model.tflite` stays float32;
            a `PrecisionWarning` says so, and another says when this CPU lacks native bfloat16 (the
            export is written all the same, for serving elsewhere).
        mediapipe: also write `out/model.mediapipe.tflite` (float32, `quantize` as for TFLite), which
            MediaPipe's `TextClassifier` or `TextEmbedder` runs: WordPiece ids in, vocabulary and labels in
            its metadata (`kbert.export.mediapipe_convert`).
        select_tf_ops: with `tflite`, a tokenizer that LiteRT's built-ins cannot run (RoBERTa's byte-level BPE;
            ALBERT's SentencePiece where the task needs offsets) goes into `model.tflite` as TensorFlow select ops,
            which need the Flex delegate where the file runs (`kbert.export.tflite_convert`).

    Returns:
        `out`, as given.

    Raises:
        FileExistsError: `out` exists and `force` is False.
        ValueError: `tflite` with a tokenizer that LiteRT cannot run, or without the offsets the task's
            outputs need (`tflite_convert.refusal` says why); or `mediapipe` with a task, tokenizer or
            text pair MediaPipe's text tasks cannot run (`mediapipe_convert.refusal`); nothing is written.
    """
    check_quantize(quantize)
    precision, _ = resolve_precision(precision)
    if not isinstance(source, ExportSource):
        source = load_source(source, sequence_length)
    elif sequence_length:
        source = dataclasses.replace(source, sequence_length=int(sequence_length))
    given, out = out, file_io.fspath(out).rstrip("/")
    if select_tf_ops and not tflite:
        raise ValueError("select_tf_ops (--select-tf-ops) is for the TFLite file: give tflite=True (--tflite) too")
    refusal = (tflite_convert.refusal(source, select_tf_ops) if tflite else None) or (
        mediapipe_convert.refusal(source) if mediapipe else None)
    if refusal:  # before anything is written
        raise ValueError(refusal)
    if file_io.exists(out) and not force:
        raise FileExistsError(f"{out} exists; pass force=True (--force) to replace it")
    # Written beside `out` (hidden and non-numeric: TF Serving only loads directories named by an integer),
    # then renamed into place.
    with file_io.staged_directory(out) as tmp:
        module = build_module(_in_precision(source, precision, tflite or mediapipe))
        write_saved_model(module, source, tmp, precision=precision)
        if tflite:
            float32 = _in_precision(source, "float32", tflite=False)
            workdir = file_io.join(tmp, ".tflite-savedmodel")
            file_io.write_bytes(file_io.join(tmp, TFLITE_FILE),
                                tflite_convert.convert(float32, quantize=quantize, workdir=workdir,
                                                       select_tf_ops=select_tf_ops))
            file_io.rmtree(workdir)
        if mediapipe:
            float32 = _in_precision(source, "float32", tflite=False)
            workdir = file_io.join(tmp, ".mediapipe-savedmodel")
            file_io.write_bytes(file_io.join(tmp, mediapipe_convert.MEDIAPIPE_FILE),
                                mediapipe_convert.convert(float32, quantize=quantize, workdir=workdir))
            file_io.rmtree(workdir)
        if _before_rename is not None:
            _before_rename(tmp)
    return given


def _in_precision(source: ExportSource, precision: str, tflite: bool) -> ExportSource:
    """`source` with its model in `precision`, warning where bfloat16 is slow here or not in TFLite."""
    from kbert.export.model_precision import with_precision

    if precision == "float32":  # a model trained in bfloat16 is exported in float32 too
        return dataclasses.replace(source, model=with_precision(source.model, precision))
    message = bf16_warning()
    if message:
        warnings.warn(message, PrecisionWarning, stacklevel=3)
    if tflite:
        warnings.warn("TFLite has no bfloat16 kernels: the .tflite files are exported in float32; only the "
                      "SavedModel computes in bfloat16", PrecisionWarning, stacklevel=3)
    return dataclasses.replace(source, model=with_precision(source.model, precision))


def write_saved_model(module: ServingModule, source: ExportSource, directory: str | os.PathLike,
                      precision: str = "float32") -> None:
    """Saves `module` with its assets into an empty `directory`, then writes the warmup records.

    `precision` ("float32" or "bfloat16", what `module`'s model computes in) goes into the export's
    config file."""
    # Staged beside `directory`, on its file system (which may be a URL), and removed afterwards.
    staging = file_io.temp_sibling(directory, "assets")
    try:
        source.tokenizer.save_vocabulary(staging)  # each tokenizer's own files and tokenizer_config.json
        tokenizer_config = file_io.read_json(file_io.join(staging, TOKENIZER_CONFIG))
        file_io.write_text(file_io.join(staging, "labels.txt"), "".join(f"{x}\n" for x in source.labels or []))
        config = {"task": source.task.name, "labels": source.labels, "sequence_length": source.sequence_length,
                  "truncate": source.truncate, "pair": source.task.takes_pair, "tokenizer": tokenizer_config,
                  "signatures": module.signature_config(), "precision": precision}
        file_io.write_json(file_io.join(staging, CONFIG_FILE), config)
        # Tracked assets are copied into directory/assets and referenced relatively.
        module.assets = [tf.saved_model.Asset(file_io.join(staging, name))
                         for name in sorted(file_io.listdir(staging))]
        tf.saved_model.save(module, file_io.fspath(directory), signatures=module.signatures())
    finally:
        file_io.rmtree(staging)
    write_warmup(directory, module)


def warmup_inputs(task: Task, names: Sequence[str]) -> dict[str, np.ndarray]:
    """One batch of the task's example requests for a signature's inputs (shorter example lists repeat).

    Args:
        task: the `Task`; its `example_requests` maps input names to example strings.
        names: the signature's input names.

    Returns:
        `{input name: (batch,) object array of str}`.

    Raises:
        ValueError: the task has no example for one of the inputs.
    """
    examples = task.example_requests
    missing = [n for n in names if not examples.get(n)]
    if missing:
        raise ValueError(f"{type(task).__name__}.example_requests has no example for input(s) {missing}")
    batch = max(len(examples[n]) for n in names)
    return {n: np.array([examples[n][i % len(examples[n])] for i in range(batch)], dtype=object) for n in names}


def write_warmup(directory: str | os.PathLike, module: ServingModule) -> str:
    """Writes `assets.extra/tf_serving_warmup_requests`: one PredictionLog per signature, its inputs the
    task's example requests."""
    return write_warmup_requests(directory, [(name, warmup_inputs(module.task, names))
                                             for name, names in module.signature_inputs().items()])


def write_warmup_requests(directory: str | os.PathLike,
                          requests: Sequence[tuple[str, dict[str, np.ndarray]]]) -> str:
    """Writes `assets.extra/tf_serving_warmup_requests` of a SavedModel directory, one PredictionLog per
    `(signature name, {input name: batch})` (an object array is a batch of strings); returns its path."""
    from tensorflow_serving.apis import model_pb2, predict_pb2, prediction_log_pb2

    path = file_io.join(directory, "assets.extra", WARMUP_FILE)
    file_io.makedirs(file_io.dirname(path))
    with tf.io.TFRecordWriter(path) as writer:
        for name, inputs in requests:
            request = predict_pb2.PredictRequest(model_spec=model_pb2.ModelSpec(signature_name=name))
            for key, value in inputs.items():
                value = np.asarray(value)
                dtype = tf.string if value.dtype == object or value.dtype.kind in "SU" else None
                request.inputs[key].CopyFrom(tf.make_tensor_proto(value, dtype=dtype))
            log = prediction_log_pb2.PredictionLog(predict_log=prediction_log_pb2.PredictLog(request=request))
            writer.write(log.SerializeToString())
    return path


def read_warmup(directory: str | os.PathLike) -> list[tuple[str, dict[str, Any]]]:
    """The warmup requests of an export as `(signature_name, {input: ndarray})`."""
    from tensorflow_serving.apis import prediction_log_pb2

    path = file_io.join(directory, "assets.extra", WARMUP_FILE)
    if not file_io.isfile(path):
        raise FileNotFoundError(f"no warmup file: {path}")
    requests = []
    for record in tf.data.TFRecordDataset(path):
        log = prediction_log_pb2.PredictionLog.FromString(record.numpy())
        request = log.predict_log.request
        requests.append((request.model_spec.signature_name,
                         {k: tf.make_ndarray(v) for k, v in request.inputs.items()}))
    return requests
