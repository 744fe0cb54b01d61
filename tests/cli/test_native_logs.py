"""The console script's stderr carries kbert's words, not TensorFlow's native log lines (unless KBERT_TF_LOGS=1)."""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys

from kbert.cli.native_logs import is_native_log

ROOT = pathlib.Path(__file__).resolve().parents[2]
VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat"]


def console(*argv: str, **env: str) -> subprocess.CompletedProcess:
    """`kbert ARGV` as the console script runs it, in a fresh process."""
    environ = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]), **env}
    environ.pop("KBERT_TF_LOGS", None)
    environ.update(env)
    return subprocess.run([sys.executable, "-m", "kbert.cli.main", *argv], capture_output=True, cwd=ROOT,
                          env=environ, timeout=180)


def test_native_lines_are_recognised():
    assert is_native_log(b"I0000 00:00:1795908651.396214   23258 port.cc:153] oneDNN custom operations are on.\n")
    assert is_native_log(b"2026-11-29 00:16:57.189461: I tensorflow/core/util/port.cc:153] oneDNN custom ops\n")
    # TensorFlow 2.20 names the source file with its path.
    assert is_native_log(b"E0000 00:00:1795911313.2 30001 external/local_xla/xla/stream_executor/cuda/"
                         b"cuda_platform.cc:51] failed call to cuInit: INTERNAL: CUDA error\n")
    assert is_native_log(b"WARNING: All log messages before absl::InitializeLog() is called are written to STDERR\n")
    assert not is_native_log(b"I0000 is how a line of mine begins\n")
    assert not is_native_log(b"WARNING: a warning of kbert's own\n")


def test_first_screen_is_kbert_words_only(tmp_path):
    import kbert

    encoder = kbert.BertEncoder(vocab_size=len(VOCAB), hidden_size=8, num_hidden_layers=1, num_attention_heads=2,
                                intermediate_size=16, max_position_embeddings=16)
    kbert.save_pretrained(encoder, tmp_path / "ckpt", vocabulary=VOCAB)
    quiet = console("convert", str(tmp_path / "ckpt"), "--out", str(tmp_path / "hf"), "--format", "hf")
    assert quiet.returncode == 0, quiet.stderr.decode()[-2000:]
    assert b"Wrote hf checkpoint" in quiet.stdout
    assert [line for line in quiet.stderr.splitlines(keepends=True) if is_native_log(line)] == []
    failing = console("convert", str(tmp_path / "missing"), "--out", str(tmp_path / "x"))
    assert failing.returncode == 1 and failing.stderr.startswith(b"kbert convert: error: ")
    loud = console("convert", str(tmp_path / "ckpt"), "--out", str(tmp_path / "hf2"), "--format", "hf",
                   KBERT_TF_LOGS="1")
    assert loud.returncode == 0 and any(is_native_log(line) for line in loud.stderr.splitlines(keepends=True))
