"""tensorflow-text's TFLite kernels, registered without TensorFlow (`kbert.export.tflite.text_op_registerers`)."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_registerers_without_tensorflow_are_tensorflow_texts_and_tensorflow_still_loads():
    code = (
        "import sys\n"
        "from kbert.export import tflite\n"
        "names = sorted(f.__name__ for f in tflite.text_op_registerers())\n"
        "assert 'tensorflow' not in sys.modules and 'tensorflow_text' not in sys.modules\n"
        # The same kernels as tensorflow-text's own list, and loading it afterwards reuses the loaded module
        # (a second copy of the extension crashes the process when it exits).
        "import tensorflow_text\n"
        "assert names == sorted(f.__name__ for f in tensorflow_text.tflite_registrar.SELECT_TFTEXT_OPS), names\n"
        "assert tflite.text_op_registerers() is tensorflow_text.tflite_registrar.SELECT_TFTEXT_OPS\n"
        "print(len(names))\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, env=env,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert int(proc.stdout.split()[-1]) >= 4  # ByteSplit..., FastWordpiece..., RaggedTensorToTensor at least
