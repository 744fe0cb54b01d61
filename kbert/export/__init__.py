"""Exports: strings-in SavedModels for TF Serving, and TFLite files for LiteRT."""

from kbert.lazy_exports import lazy_exports

# name -> module; each is imported on first use (PEP 562), so TensorFlow-free modules of the package load fast.
_EXPORTS = {
    "ExportSource": "kbert.export.export_source",
    "build_module": "kbert.export.export_source",
    "export": "kbert.export.savedmodel",
    "load_source": "kbert.export.export_source",
    "read_warmup": "kbert.export.savedmodel",
    "read_export_config": "kbert.export.export_config",
    "ServingModule": "kbert.export.serving_module",
}
__all__ = ["ExportSource", "ServingModule", "build_module", "export", "load_source", "read_export_config",
           "read_warmup"]
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
