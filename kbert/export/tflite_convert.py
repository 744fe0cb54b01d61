"""TFLite conversion of a kbert export: its `ServingModule`, tokenizing with a TFLite tokenizer, through
TensorFlow's converter. `kbert.export.tflite` runs the file it writes, without TensorFlow.

The graph tokenizes with the tokenizer's TFLite twin (its `tflite_twin`): `kbert.text.TFLiteBertTokenizer` (the
SavedModel's ids and character offsets) or `kbert.text.TFLiteSentencePieceTokenizer` (its ids), and is
converted to TFLite built-ins plus tensorflow-text's TFLite kernels (ByteSplitWithOffsets,
FastWordpieceDetokenize, FastWordpieceTokenizeWithOffsets, FastSentencepieceTokenize, RaggedTensorToTensor, in
`tensorflow_text.tflite_registrar.SELECT_TFTEXT_OPS`): no Flex op, which LiteRT ships without.

A tokenizer whose twin cannot serve converts with `select_tf_ops=True` where it allows it (`tflite_select_ops`):
RoBERTa's byte-level BPE (no twin: GPT-2's splitting needs regular expressions) and ALBERT's SentencePiece for
tagging and QA (its twin has no offsets). The file then holds the tokenizer's ops as TensorFlow select ops
("Flex"), which run only where the Flex delegate is linked (Android's tensorflow-lite-select-tf-ops, TensorFlow's
own `tf.lite.Interpreter` up to 2.18), not under LiteRT's Python package, TensorFlow 2.19+ or MediaPipe; ALBERT's
also need tensorflow-text's kernels in that delegate (loaded beside it in Python; a custom build on Android).
`kbert.export.tflite.flex_ops` lists a file's.
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib
import os
import tempfile

import tensorflow as tf

import kbert.file_io as file_io
from kbert.export.export_source import ExportSource, build_module
from kbert.export.model_precision import with_precision
from kbert.precision import check_quantize
from kbert.text import BertTokenizer


def lite_tokenizer(tokenizer: BertTokenizer, select_tf_ops: bool = False, offsets: bool = False) -> BertTokenizer:
    """The tokenizer's TFLite twin (its `tflite_twin`): its ids, and offsets where it has them, from ops that
    LiteRT runs. With `select_tf_ops`, a tokenizer whose twin cannot serve (none, or no offsets where `offsets` are
    needed) and that may go in as select ops (`tflite_select_ops`) is itself."""
    twin_fails = getattr(tokenizer, "tflite_unsupported", None) or (
        offsets and getattr(tokenizer, "tflite_offsets_unsupported", None))
    if select_tf_ops and twin_fails and getattr(tokenizer, "tflite_select_ops", False):
        return tokenizer
    module, name = tokenizer.tflite_twin.split(":")
    return getattr(importlib.import_module(module), name).from_tokenizer(tokenizer)


def refusal(source: ExportSource, select_tf_ops: bool = False) -> str | None:
    """Why `source` can have no TFLite file (said before anything is written), or None."""
    tokenizer, kind = source.tokenizer, type(source.tokenizer).__name__
    if select_tf_ops and getattr(tokenizer, "tflite_select_ops", False):
        return None
    if getattr(tokenizer, "tflite_unsupported", None):
        return f"no TFLite export with a {kind}: {tokenizer.tflite_unsupported}"
    if source.task.serving_uses_offsets and getattr(tokenizer, "tflite_offsets_unsupported", None):
        return f"no TFLite export of a {source.task.name} model with a {kind}: {tokenizer.tflite_offsets_unsupported}"
    return None


def convert(source: ExportSource, quantize: str = "none", workdir: str | os.PathLike | None = None,
            select_tf_ops: bool = False) -> bytes:
    """Converts an `ExportSource` to a `.tflite` flatbuffer.

    Args:
        source: `kbert.export.ExportSource`.
        quantize: one of `kbert.precision.QUANTIZE_MODES`: "none" (float32), "dynamic" (dynamic-range int8
            weights) or "float16" (float16 weights).
        workdir: an empty or absent directory, on any file system, for the intermediate SavedModel the
            converter reads (left for the caller to delete); None uses a local temporary directory.
        select_tf_ops: keep the TensorFlow ops that have no built-in as select (Flex) ops, and tokenize with the
            tokenizer itself where its twin cannot serve (`lite_tokenizer`); see the module's docstring.

    Returns:
        The TFLite model bytes, with the SavedModel's signatures. The graph computes in float32 whatever policy
        the model was trained under: a bfloat16 graph converts, but LiteRT has no bfloat16 kernels for some of
        its ops (Slice) and would refuse it when first run.

    Example:
    >>> pathlib.Path("model.tflite").write_bytes(convert(source, quantize="dynamic"))  # doctest: +SKIP
    """
    check_quantize(quantize)
    source = dataclasses.replace(source, model=with_precision(source.model, "float32"))
    module = build_module(source, tokenizer=lite_tokenizer(source.tokenizer, select_tf_ops,
                                                           source.task.serving_uses_offsets))
    staging = tempfile.TemporaryDirectory() if workdir is None else contextlib.nullcontext(file_io.fspath(workdir))
    with staging as tmp:
        tf.saved_model.save(module, tmp, signatures=module.signatures())
        converter = tf.lite.TFLiteConverter.from_saved_model(tmp, signature_keys=sorted(module.signatures()))
        # Built-ins plus tensorflow-text's custom ops; a graph needing Flex fails here, not on the phone, unless
        # select ops were asked for.
        converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS] + (
            [tf.lite.OpsSet.SELECT_TF_OPS] if select_tf_ops else [])
        converter.allow_custom_ops = True
        if quantize != "none":
            converter.optimizations = [tf.lite.Optimize.DEFAULT]
        if quantize == "float16":
            converter.target_spec.supported_types = [tf.float16]
        return converter.convert()
