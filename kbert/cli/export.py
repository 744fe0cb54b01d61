"""`kbert export MODEL_DIR --out OUT`: a strings-in SavedModel for TF Serving, and optionally TFLite."""

from __future__ import annotations

import argparse


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.description = (
        "Export a fine-tuned model directory (or a bare encoder checkpoint) as one SavedModel that takes "
        "raw strings: tokenizer, packing, model and post-processing. OUT may be a TF Serving version "
        "directory (export/models/NAME/VERSION); it is written beside OUT and renamed into place. "
        "With --tflite the TFLite file is written inside the export, at OUT/model.tflite."
    )
    parser.add_argument("model_dir",
                        help="kbert model directory (task.json) or an encoder checkpoint (kbert, HF, Google)")
    parser.add_argument("--out", required=True, help="export directory to create")
    parser.add_argument("--tflite", action="store_true", help="also write OUT/model.tflite (LiteRT)")
    parser.add_argument("--quantize", choices=["none", "dynamic", "float16"], default="none",
                        help="TFLite weights: float32, dynamic-range int8, or float16 (default: none)")
    parser.add_argument("--sequence-length", type=int, default=None,
                        help="longest packed input (default: the training sequence length; 128 for an encoder)")
    parser.add_argument("--force", action="store_true", help="replace OUT if it exists")
    parser.add_argument("--precision", choices=["float32", "bfloat16"], default="float32",
                        help="what the SavedModel's encoder computes in: bfloat16 runs the products on AMX or "
                             "AVX512-BF16 (a warning says when this CPU has neither); model.tflite stays float32 "
                             "(default: float32)")


def run(args: argparse.Namespace) -> int:
    import kbert.file_io as file_io
    from kbert.export import export

    out = export(args.model_dir, args.out, tflite=args.tflite, quantize=args.quantize,
                 sequence_length=args.sequence_length, force=args.force, precision=args.precision)
    print(f"SavedModel ({args.precision}) written to {out}")
    if args.tflite:
        print(f"TFLite (float32) written to {file_io.join(out, 'model.tflite')}")
    return 0
