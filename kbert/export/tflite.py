"""TFLite conversion of a kbert export, and running the `.tflite` file with LiteRT.

The TFLite graph tokenizes with `kbert.text.TFLiteBertTokenizer`: the SavedModel's ids and character
offsets, from TFLite built-ins and tensorflow-text's TFLite kernels only (ByteSplitWithOffsets,
FastWordpieceDetokenize, FastWordpieceTokenizeWithOffsets, RaggedTensorToTensor, registered by
`tensorflow_text.tflite_registrar.SELECT_TFTEXT_OPS`), so `ai_edge_litert`, which ships without the Flex
delegate, runs it. The string slices (`word_text`, `entity_text`, `answer`) are not in the TFLite file
(TFLite has no kernel for character substrings); the caller slices the text at the offsets.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from typing import Any

import numpy as np
import tensorflow as tf

import kbert.file_io as file_io

QUANTIZE_MODES = ("none", "dynamic", "float16")


def convert(source, quantize: str = "none", workdir: str | os.PathLike | None = None) -> bytes:
    """Converts an `ExportSource` (see `kbert.export.savedmodel`) to a `.tflite` flatbuffer.

    Args:
        source: `kbert.export.savedmodel.ExportSource`.
        quantize: "none" (float32), "dynamic" (dynamic-range int8 weights) or "float16" (float16 weights).
        workdir: an empty or absent directory, on any file system, for the intermediate SavedModel the
            converter reads (left for the caller to delete); None uses a local temporary directory.

    Returns:
        The TFLite model bytes, with the SavedModel's signatures.
    """
    from kbert.export.savedmodel import build_module
    from kbert.text import TFLiteBertTokenizer

    if quantize not in QUANTIZE_MODES:
        raise ValueError(f"quantize must be one of {QUANTIZE_MODES}, got {quantize!r}")
    module = build_module(source, tokenizer=TFLiteBertTokenizer.from_tokenizer(source.tokenizer))
    staging = tempfile.TemporaryDirectory() if workdir is None else contextlib.nullcontext(file_io.fspath(workdir))
    with staging as tmp:
        tf.saved_model.save(module, tmp, signatures=module.signatures())
        converter = tf.lite.TFLiteConverter.from_saved_model(tmp, signature_keys=sorted(module.signatures()))
        # Built-ins plus tensorflow-text's custom ops; a graph needing Flex fails here, not on the phone.
        converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS]
        converter.allow_custom_ops = True
        if quantize != "none":
            converter.optimizations = [tf.lite.Optimize.DEFAULT]
        if quantize == "float16":
            converter.target_spec.supported_types = [tf.float16]
        return converter.convert()


def interpreter(path_or_bytes: str | os.PathLike | bytes, num_threads: int | None = None):
    """A LiteRT interpreter with tensorflow-text's TFLite ops registered."""
    import tensorflow_text
    from ai_edge_litert.interpreter import InterpreterWithCustomOps

    registerers = tensorflow_text.tflite_registrar.SELECT_TFTEXT_OPS
    if isinstance(path_or_bytes, bytes):
        return InterpreterWithCustomOps(custom_op_registerers=registerers, model_content=path_or_bytes,
                                        num_threads=num_threads)
    path = file_io.fspath(path_or_bytes)
    if not file_io.isfile(path):
        raise FileNotFoundError(f"TFLite file not found: {path}")
    # LiteRT reads local files only: the file is read through gfile and handed over as bytes.
    return InterpreterWithCustomOps(custom_op_registerers=registerers, model_content=file_io.read_bytes(path),
                                    num_threads=num_threads)


def run(interp, inputs: dict[str, Any], signature: str = "serving_default") -> dict[str, np.ndarray]:
    """Runs one signature; string inputs are 1-D arrays (or lists) of str or bytes."""
    runner = interp.get_signature_runner(signature)
    feed = {k: np.asarray(v, dtype=object) if np.asarray(v).dtype.kind in "OUS" else np.asarray(v)
            for k, v in inputs.items()}
    return runner(**feed)
