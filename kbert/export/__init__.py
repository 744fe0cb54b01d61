"""Exports: strings-in SavedModels for TF Serving, and TFLite files for LiteRT."""

from kbert.export.savedmodel import ExportSource, build_module, export, load_source, read_warmup
from kbert.export.serving_module import ServingModule

__all__ = ["ExportSource", "ServingModule", "build_module", "export", "load_source", "read_warmup"]
