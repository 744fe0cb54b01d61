"""`kbert export MODEL_DIR --out OUT`: a strings-in SavedModel for TF Serving, and optionally TFLite."""

from __future__ import annotations

import argparse
import dataclasses

from kbert.cli.flags import add_dataclass_flags, collect
from kbert.precision import PRECISIONS, QUANTIZE_MODES


@dataclasses.dataclass
class ExportSettings:
    """The settings of `kbert export`, one flag each.

    Args:
        model_dir: str. A kbert model directory (task.json), an encoder checkpoint or a model name.
        out: str. The export directory to create.
        tflite: bool. Also write OUT/model.tflite.
        select_tf_ops: bool. With --tflite, keep the tokenizer ops LiteRT's built-ins lack as TensorFlow select
            ops (Flex): how RoBERTa's byte-level BPE, and ALBERT's tagging and QA, convert.
        mediapipe: bool. Also write OUT/model.mediapipe.tflite, for MediaPipe Tasks' TextClassifier or
            TextEmbedder.
        quantize: str. TFLite weights: "none", "dynamic" or "float16".
        sequence_length: int or None. Longest packed input (None: the training sequence length).
        force: bool. Replace OUT if it exists.
        precision: str. What the SavedModel's encoder computes in: "float32", "bfloat16", or "auto" (bfloat16
            where this CPU has native bfloat16).

    Example:
        >>> ExportSettings("model", out="export/models/sst2/1").quantize
        'none'
    """

    model_dir: str = dataclasses.field(metadata={
        "positional": True,
        "help": "kbert model directory (task.json), an encoder checkpoint (kbert, HF, Google), a sentence-transformers "
                "directory, or a model name: hf://ORG/NAME[@REVISION], or ORG/NAME when no such directory exists"})
    out: str = dataclasses.field(metadata={"help": "export directory to create"})
    tflite: bool = dataclasses.field(default=False, metadata={
        "switch": True, "help": "also write OUT/model.tflite (LiteRT)"})
    select_tf_ops: bool = dataclasses.field(default=False, metadata={
        "switch": True,
        "help": "with --tflite: a tokenizer LiteRT's built-ins cannot run (RoBERTa's byte-level BPE; ALBERT's "
                "SentencePiece with the offsets tagging and QA need) goes into model.tflite as TensorFlow select "
                "ops; the file then runs only with the Flex delegate (Android's tensorflow-lite-select-tf-ops, "
                "TensorFlow's tf.lite.Interpreter up to 2.18; ALBERT's also need tensorflow-text's kernels), not "
                "in LiteRT's Python package, TensorFlow 2.19+ or MediaPipe"})
    mediapipe: bool = dataclasses.field(default=False, metadata={
        "switch": True,
        "help": "also write OUT/model.mediapipe.tflite for MediaPipe Tasks (TextClassifier for classify, "
                "TextEmbedder for embed and encoder): WordPiece ids in (MediaPipe tokenizes), vocabulary and "
                "labels in its metadata; uncased WordPiece models of one text only (see docs/cli.md)"})
    quantize: str = dataclasses.field(default="none", metadata={
        "choices": QUANTIZE_MODES,
        "help": "TFLite weights (model.tflite and model.mediapipe.tflite): float32, dynamic-range int8, or "
                "float16 (default: none)"})
    sequence_length: int | None = dataclasses.field(default=None, metadata={
        "help": "longest packed input (default: the training sequence length; 128 for an encoder)"})
    force: bool = dataclasses.field(default=False, metadata={"switch": True, "help": "replace OUT if it exists"})
    precision: str = dataclasses.field(default="float32", metadata={
        "choices": PRECISIONS,
        "help": "what the SavedModel's encoder computes in: bfloat16 runs the products on AMX or AVX512-BF16 "
                "(a warning says when this CPU has neither); auto picks bfloat16 where this CPU has either, "
                "float32 elsewhere; model.tflite stays float32 (default: float32)"})


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Adds the command's flags, one per field of `ExportSettings`."""
    parser.description = (
        "Export a fine-tuned model directory (or a bare encoder checkpoint) as one SavedModel that takes "
        "raw strings: tokenizer, packing, model and post-processing. OUT may be a TF Serving version "
        "directory (export/models/NAME/VERSION); it is written beside OUT and renamed into place. "
        "With --tflite the TFLite file is written inside the export, at OUT/model.tflite; with --mediapipe "
        "one that MediaPipe Tasks runs, at OUT/model.mediapipe.tflite."
    )
    add_dataclass_flags(parser, ExportSettings, required=("out",))


def run(args: argparse.Namespace) -> int:
    """Writes the export; prints where."""
    import kbert.file_io as file_io
    from kbert.export import export
    from kbert.precision import resolve_precision

    settings = ExportSettings(**collect(args, ExportSettings))
    precision, why = resolve_precision(settings.precision)
    out = export(settings.model_dir, settings.out, tflite=settings.tflite, quantize=settings.quantize,
                 sequence_length=settings.sequence_length, force=settings.force, precision=precision,
                 mediapipe=settings.mediapipe, select_tf_ops=settings.select_tf_ops)
    print(f"SavedModel ({precision}{'; ' + why if why else ''}) written to {out}")
    if settings.tflite:
        path, ops = file_io.join(out, "model.tflite"), ""
        if settings.select_tf_ops:
            from kbert.export.tflite import flex_ops

            flex = flex_ops(file_io.read_bytes(path))
            ops = (f" with {len(flex)} TensorFlow select ops (it needs the Flex delegate)" if flex else
                   " (no select op was needed: LiteRT runs it)")
        print(f"TFLite (float32){ops} written to {path}")
    if settings.mediapipe:
        print(f"TFLite for MediaPipe Tasks written to {file_io.join(out, 'model.mediapipe.tflite')}")
    return 0
