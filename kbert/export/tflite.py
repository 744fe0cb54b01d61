"""Running a kbert `.tflite` file with LiteRT, without TensorFlow in the process (`kbert predict`).

The file (written by `kbert.export.tflite_convert`) needs TFLite built-ins and tensorflow-text's TFLite
kernels only, so `ai_edge_litert`, which ships without the Flex delegate, runs it once those kernels are
registered (`text_op_registerers`). A file converted with TensorFlow select ops (`--select-tf-ops`) needs the Flex
delegate, which LiteRT's Python package lacks: `interpreter` refuses it, naming those ops (`flex_ops`). The string
outputs that slice the input text are not in the file (TFLite has no kernel for character substrings); the caller
slices the text at the offsets.

Example:
>>> interp = interpreter("export/models/sst2/1/model.tflite")  # doctest: +SKIP
>>> run(interp, {"text": ["a good film"]})["probabilities"]  # doctest: +SKIP
"""

from __future__ import annotations

import ctypes
import importlib.machinery
import importlib.util
import mmap
import os
import sys
from typing import Any

import numpy as np

import kbert.file_io as file_io


def interpreter(path_or_bytes: str | os.PathLike | bytes, num_threads: int | None = None):
    """A LiteRT interpreter with tensorflow-text's TFLite ops registered.

    Raises:
        FileNotFoundError: no file at the path.
        ValueError: the file is not a TFLite model, or holds TensorFlow select ops (`flex_ops`), which this
            runtime cannot run.
    """
    from ai_edge_litert.interpreter import InterpreterWithCustomOps

    registerers = text_op_registerers()
    if isinstance(path_or_bytes, bytes):
        _check_runnable(path_or_bytes, "the TFLite model")
        return InterpreterWithCustomOps(custom_op_registerers=registerers, model_content=path_or_bytes,
                                        num_threads=num_threads)
    path = file_io.fspath(path_or_bytes)
    if file_io.is_local(path):
        # LiteRT reads a local file itself, so `kbert predict model.tflite` loads no TensorFlow; the check reads
        # only the flatbuffer's op table, through a memory map.
        if not os.path.isfile(path):
            raise FileNotFoundError(f"TFLite file not found: {path}")
        with open(path, "rb") as handle:
            if not os.fstat(handle.fileno()).st_size:
                raise ValueError(f"{path}: not a TFLite model (an empty file)")
            with mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as content:
                _check_runnable(content, path)
        return InterpreterWithCustomOps(custom_op_registerers=registerers, model_path=path,
                                        num_threads=num_threads)
    if not file_io.isfile(path):
        raise FileNotFoundError(f"TFLite file not found: {path}")
    # A URL: read through gfile and handed over as bytes.
    content = file_io.read_bytes(path)
    _check_runnable(content, path)
    return InterpreterWithCustomOps(custom_op_registerers=registerers, model_content=content,
                                    num_threads=num_threads)


def _check_runnable(content, name: str) -> None:
    """Raises a ValueError naming `name` if `content` is no TFLite model or needs the Flex delegate."""
    try:
        flex = flex_ops(content)
    except ValueError as error:
        raise ValueError(f"{name}: {error}") from None
    if flex:
        raise ValueError(f"{name} holds TensorFlow select ops ({', '.join(flex)}), which need the Flex delegate; "
                         "LiteRT's Python package (and TensorFlow's since 2.19) ships without it. Run the file where "
                         "it is linked: TensorFlow's tf.lite.Interpreter up to 2.18, or an Android app with "
                         "org.tensorflow:tensorflow-lite-select-tf-ops")


def flex_ops(content: bytes | mmap.mmap) -> list[str]:
    """The TensorFlow select ops of a `.tflite` file (its "Flex" custom ops, the prefix dropped), sorted; [] for
    a file of TFLite built-ins and tensorflow-text kernels only.

    Example:
    >>> flex_ops(pathlib.Path("export/models/roberta/1/model.tflite").read_bytes())[:2]  # doctest: +SKIP
    ['BitwiseAnd', 'DecodeRaw']
    """
    from ai_edge_litert import schema_py_generated as schema

    try:
        model = schema.Model.GetRootAsModel(content, 0)
        codes = [model.OperatorCodes(i).CustomCode() for i in range(model.OperatorCodesLength())]
    except Exception as error:  # flatbuffers raises what a short read gives (struct.error, IndexError, ...)
        raise ValueError(f"not a TFLite model ({type(error).__name__}: {error})") from None
    return sorted({code.decode()[len("Flex"):] for code in codes if code and code.startswith(b"Flex")})


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
