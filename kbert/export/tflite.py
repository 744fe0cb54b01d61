"""Running a kbert `.tflite` file with LiteRT, without TensorFlow in the process (`kbert predict`).

The file (written by `kbert.export.tflite_convert`) needs TFLite built-ins and tensorflow-text's TFLite
kernels only, so `ai_edge_litert`, which ships without the Flex delegate, runs it once those kernels are
registered (`text_op_registerers`). The string outputs that slice the input text are not in the file
(TFLite has no kernel for character substrings); the caller slices the text at the offsets.

Example:
>>> interp = interpreter("export/models/sst2/1/model.tflite")  # doctest: +SKIP
>>> run(interp, {"text": ["a good film"]})["probabilities"]  # doctest: +SKIP
"""

from __future__ import annotations

import ctypes
import importlib.machinery
import importlib.util
import os
import sys
from typing import Any

import numpy as np

import kbert.file_io as file_io


def interpreter(path_or_bytes: str | os.PathLike | bytes, num_threads: int | None = None):
    """A LiteRT interpreter with tensorflow-text's TFLite ops registered."""
    from ai_edge_litert.interpreter import InterpreterWithCustomOps

    registerers = text_op_registerers()
    if isinstance(path_or_bytes, bytes):
        return InterpreterWithCustomOps(custom_op_registerers=registerers, model_content=path_or_bytes,
                                        num_threads=num_threads)
    path = file_io.fspath(path_or_bytes)
    if file_io.is_local(path):
        # LiteRT reads a local file itself, so `kbert predict model.tflite` loads no TensorFlow.
        if not os.path.isfile(path):
            raise FileNotFoundError(f"TFLite file not found: {path}")
        return InterpreterWithCustomOps(custom_op_registerers=registerers, model_path=path,
                                        num_threads=num_threads)
    if not file_io.isfile(path):
        raise FileNotFoundError(f"TFLite file not found: {path}")
    # A URL: read through gfile and handed over as bytes.
    return InterpreterWithCustomOps(custom_op_registerers=registerers, model_content=file_io.read_bytes(path),
                                    num_threads=num_threads)


def text_op_registerers() -> list:
    """tensorflow-text's TFLite kernels (`tensorflow_text.tflite_registrar.SELECT_TFTEXT_OPS`).

    `import tensorflow_text` imports TensorFlow and Keras (4-9 s), which running a `.tflite` file does not
    need: the kernels live in one extension module that needs only TensorFlow's framework library. When
    TensorFlow is not loaded yet, that module is loaded alone; otherwise, or if that fails (another
    platform or package layout), through `tensorflow_text`.
    """
    if "tensorflow" not in sys.modules:
        try:
            registrar = _load_registrar()
            return [getattr(registrar, name) for name in sorted(dir(registrar)) if name.startswith("Add")]
        except (ImportError, OSError):
            pass
    import tensorflow_text

    return tensorflow_text.tflite_registrar.SELECT_TFTEXT_OPS


def _load_registrar():
    """tensorflow-text's `tflite_registrar` extension, loaded without the `tensorflow_text` package."""
    text, framework = importlib.util.find_spec("tensorflow_text"), importlib.util.find_spec("tensorflow")
    if text is None or framework is None or text.origin is None or framework.origin is None:
        raise ImportError("tensorflow-text is not installed")
    # The extension links against TensorFlow's framework library, found by `import tensorflow` otherwise.
    # Loaded local (RTLD_GLOBAL would make a later `import tensorflow` in this process crash).
    ctypes.CDLL(os.path.join(os.path.dirname(framework.origin), "libtensorflow_framework.so.2"))
    # Under its own name, so that a later `import tensorflow_text` finds it loaded (a second copy crashes).
    name = "tensorflow_text.core.pybinds.tflite_registrar"
    path = os.path.join(os.path.dirname(text.origin), "core", "pybinds", "tflite_registrar.so")
    loader = importlib.machinery.ExtensionFileLoader(name, path)
    module = importlib.util.module_from_spec(importlib.util.spec_from_loader(name, loader))
    loader.exec_module(module)
    sys.modules[name] = module
    return module


def run(interp, inputs: dict[str, Any], signature: str = "serving_default") -> dict[str, np.ndarray]:
    """Runs one signature; string inputs are 1-D arrays (or lists) of str or bytes."""
    runner = interp.get_signature_runner(signature)
    feed = {k: np.asarray(v, dtype=object) if np.asarray(v).dtype.kind in "OUS" else np.asarray(v)
            for k, v in inputs.items()}
    return runner(**feed)
