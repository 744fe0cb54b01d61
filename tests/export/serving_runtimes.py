"""Classifier exports built through the public API, and their two runtimes behind one call.

Shared by the serving fuzz (`tests/export/fuzz_harness.py`), the load benchmark (`tests/export/load_harness.py`)
and their tests. An export is made as a user makes one: `kbert.save_model` writes a model directory and
`kbert export DIR --out EXPORT [--tflite]` (run through `kbert.cli.main.main`) turns it into the export;
the SavedModel is read back with `tf.saved_model.load` and the TFLite file with `ai_edge_litert` and
tensorflow-text's op registrar, as a phone app would run it.
"""

from __future__ import annotations

import contextlib
import io
import pathlib
from typing import Any, Sequence

import keras
import numpy as np
import tensorflow as tf

import kbert
from kbert.cli.main import main as cli_main

LABELS = ["neg", "neu", "pos"]


def tiny_encoder(tokenizer: kbert.BertTokenizer, seed: int = 1,
                 initializer_range: float = 0.5) -> kbert.BertEncoder:
    """A 2-layer, hidden-16 encoder over `tokenizer`'s vocabulary, with random weights and no dropout.

    Args:
        tokenizer: `kbert.BertTokenizer`. its vocabulary size sets the embedding table.
        seed: int. Keras' random seed for the weights.
        initializer_range: float. the weights' standard deviation. BERT's 0.02 gives a random model whose
            probabilities hardly move with the input (1e-6 between different texts); 0.5 moves them by
            about 1e-2 for a single changed token, so a tokenizer difference cannot hide under a 1e-4
            tolerance.
    """
    keras.utils.set_random_seed(seed)
    return kbert.BertEncoder(vocab_size=tokenizer.vocabulary_size(), hidden_size=16, num_hidden_layers=2,
                             num_attention_heads=2, intermediate_size=32, max_position_embeddings=64,
                             hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0,
                             initializer_range=initializer_range)


def export_model(model: keras.Model, tokenizer: kbert.BertTokenizer, root: pathlib.Path, sequence_length: int,
                 task: kbert.Task | None = None, tflite: bool = True) -> pathlib.Path:
    """`kbert.save_model` into `root/model`, then `kbert export` into `root/export/1`.

    Args:
        model: a kbert task model (`kbert.BertClassifier`, `kbert.BertTokenClassifier`, ...).
        tokenizer: its tokenizer.
        root: a directory to write under.
        sequence_length: the packing length of the export.
        task: the model's `kbert.Task` (default: `ClassificationTask(labels=LABELS)`); a classifier whose
            task has a `text_pair_column` exports a `serving_default` of `text` and `text_pair`.
        tflite: also write `model.tflite` inside the export.

    Returns:
        The export directory.

    Raises:
        RuntimeError: `kbert export` failed (its output is in the message).
    """
    model_dir = root / "model"
    task = kbert.ClassificationTask(labels=LABELS) if task is None else task
    kbert.save_model(model, model_dir, tokenizer, task, sequence_length=sequence_length)
    out = root / "export" / "1"
    argv = ["export", str(model_dir), "--out", str(out)] + (["--tflite"] if tflite else [])
    log = io.StringIO()
    with contextlib.redirect_stdout(log), contextlib.redirect_stderr(log):
        code = cli_main(argv)
    if code != 0:
        raise RuntimeError(f"kbert {' '.join(argv)} exited {code}:\n{log.getvalue()[-3000:]}")
    return out


def as_batch(texts: Sequence[bytes | str]) -> np.ndarray:
    """A 1-D object array of bytes (the string tensor both runtimes take), of any length, 0 included."""
    out = np.empty(len(texts), dtype=object)
    for i, t in enumerate(texts):
        out[i] = t.encode("utf-8") if isinstance(t, str) else bytes(t)
    return out


class SavedModelRuntime:
    """The signatures of a SavedModel export, called with numpy string batches.

    Args:
        path: the export directory.

    Call arguments:
        signature: str. a signature name, e.g. "serving_default", "preprocess", "tokenize".
        **inputs: 1-D object arrays of bytes, by input name (`text`, `text_pair`).

    Returns:
        `{output name: np.ndarray}`.
    """

    name = "savedmodel"

    def __init__(self, path: str | pathlib.Path):
        self.loaded = tf.saved_model.load(str(path))

    @property
    def signatures(self) -> list[str]:
        return list(self.loaded.signatures.keys())

    def __call__(self, signature: str, **inputs: np.ndarray) -> dict[str, np.ndarray]:
        fn = self.loaded.signatures[signature]
        out = fn(**{k: tf.constant(v, dtype=tf.string, shape=[len(v)]) for k, v in inputs.items()})
        return {k: v.numpy() for k, v in out.items()}


class TfliteRuntime:
    """The signatures of an export's `model.tflite`, run by LiteRT with tensorflow-text's TFLite ops.

    Args:
        path: the `.tflite` file (or the export directory holding `model.tflite`).

    Call arguments:
        signature: str. a signature name.
        **inputs: 1-D object arrays of bytes, by input name.

    Returns:
        `{output name: np.ndarray}`.
    """

    name = "tflite"

    def __init__(self, path: str | pathlib.Path):
        import tensorflow_text
        from ai_edge_litert.interpreter import InterpreterWithCustomOps

        path = pathlib.Path(path)
        if path.is_dir():
            path = path / "model.tflite"
        self.interpreter = InterpreterWithCustomOps(
            custom_op_registerers=tensorflow_text.tflite_registrar.SELECT_TFTEXT_OPS, model_path=str(path))
        self._runners: dict[str, Any] = {}

    @property
    def signatures(self) -> list[str]:
        return list(self.interpreter.get_signature_list())

    def __call__(self, signature: str, **inputs: np.ndarray) -> dict[str, np.ndarray]:
        if signature not in self._runners:
            self._runners[signature] = self.interpreter.get_signature_runner(signature)
        return self._runners[signature](**inputs)
