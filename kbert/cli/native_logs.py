"""TensorFlow's native log lines kept off a user's screen: `kbert`'s stderr shows kbert's words only.

TensorFlow's C++ code writes absl log lines straight to file descriptor 2: at import (`I0000 ... oneDNN custom
operations are on`, `Could not find cuda drivers`) and when it sets up devices (`E0000 ... failed call to
cuInit: INTERNAL: CUDA error`). The import-time ones come before absl's logging is initialised and ignore
TF_CPP_MIN_LOG_LEVEL, and Python cannot intercept either, so the console script runs its stderr through a pipe
that drops lines of that format and passes every other byte on. `KBERT_TF_LOGS=1` leaves stderr as it is.
"""

from __future__ import annotations

import os
import re
import sys
import threading
from collections.abc import Callable

# absl's "I0000 00:00:1795908651.396214   23258 port.cc:153] ..." (TensorFlow 2.20 writes "2026-11-29
# 00:16:57.189461: I tensorflow/core/util/port.cc:153] ..." at import), its note before InitializeLog, and the
# second line of TensorFlow's CPU-feature notice.
NATIVE_LINE = re.compile(rb"[IWEF]\d{4} \d\d:\d\d:[\d.]+ +\d+ [\w./-]+:\d+\] "
                         rb"|\d{4}-\d\d-\d\d \d\d:\d\d:[\d.]+: [IWEF] [\w./-]+:\d+\] "  # TensorFlow 2.20's
                         rb"|WARNING: All log messages before absl::InitializeLog\(\) is called"
                         rb"|To enable the following instructions: ")


def is_native_log(line: bytes) -> bool:
    """True for a line TensorFlow's C++ logging wrote.

    Example:
        >>> is_native_log(b"E0000 00:00:1795908763.824183   24436 cuda_platform.cc:52] failed call to cuInit\\n")
        True
        >>> is_native_log(b"kbert finetune: error: train.tsv:3:7: not valid UTF-8\\n")
        False
    """
    return NATIVE_LINE.match(line) is not None


def filter_native_logs() -> Callable[[], None]:
    """Sends file descriptor 2 through a filter thread that drops `is_native_log` lines; returns the function
    that stops it (passes on what is left, and gives descriptor 2 back). Lines end at "\\n" or "\\r", so a
    progress bar still updates."""
    sys.stderr.flush()
    screen = os.dup(2)
    read, write = os.pipe()
    os.dup2(write, 2)
    os.close(write)

    def pump() -> None:
        pending = b""
        while chunk := os.read(read, 1 << 16):
            *lines, pending = re.split(rb"(?<=[\n\r])", pending + chunk)
            for line in lines:
                if not is_native_log(line):
                    os.write(screen, line)
        if pending and not is_native_log(pending):
            os.write(screen, pending)
        os.close(read)

    thread = threading.Thread(target=pump, name="kbert-stderr", daemon=True)
    thread.start()

    def stop() -> None:
        sys.stderr.flush()
        os.dup2(screen, 2)  # closes the pipe's write end: the thread reads to its end
        thread.join(timeout=5)
        os.close(screen)

    return stop
