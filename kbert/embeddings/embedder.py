"""`Embedder`: one output of a strings-in SavedModel export, as a function from texts to float32 vectors."""

from __future__ import annotations

import os
from collections.abc import Sequence

import numpy as np

import kbert.file_io as file_io


class Embedder:
    """Loads a strings-in SavedModel once and calls one of its signatures on batches of texts.

    The export may be `kbert export`'s (its `embedding` output, or a bare encoder's `mean_embedding`) or
    any SavedModel whose signature takes one `tf.string` input of shape `[batch]` and returns a
    `(batch, H)` float output.

    Args:
        model: str. The SavedModel directory (local or a URL).
        output_name: str. The output holding the vectors.
        signature: str. The signature to call.

    Call arguments:
        texts: Sequence[str]. One batch of texts.

    Returns:
        An `(len(texts), H)` float32 array.

    Raises:
        FileNotFoundError: `model` is not a SavedModel directory.
        ValueError: the signature, its input or the output is not what is needed; the message names what
            the export has.

    Example:
        >>> embed = Embedder("export/minilm", output_name="mean_embedding")  # doctest: +SKIP
        >>> embed(["a cat", "a dog"]).shape  # doctest: +SKIP
        (2, 384)
    """

    def __init__(self, model: str | os.PathLike, output_name: str = "embedding",
                 signature: str = "serving_default") -> None:
        import tensorflow as tf
        import tensorflow_text  # noqa: F401  (registers the ops a kbert export's tokenizer uses)

        model = file_io.fspath(model)
        if not file_io.isfile(file_io.join(model, "saved_model.pb")):
            raise FileNotFoundError(f"{model} is not a SavedModel directory (no saved_model.pb)")
        self.model, self.output_name, self.signature = model, output_name, signature
        self.loaded = tf.saved_model.load(model)
        if signature not in self.loaded.signatures:
            raise ValueError(f"{model} has no signature {signature!r}; it has {sorted(self.loaded.signatures)}")
        self.function = self.loaded.signatures[signature]
        self.input_name = text_input(self.function, f"{model} signature {signature!r}")
        outputs = self.function.structured_outputs
        if output_name not in outputs:
            hint = " (a bare encoder export has mean_embedding)" if "mean_embedding" in outputs else ""
            raise ValueError(f"{model} signature {signature!r} has no output {output_name!r}; its outputs are "
                             f"{sorted(outputs)}: pick one with --output-name{hint}")
        spec = outputs[output_name]
        if spec.shape.rank != 2 or not spec.dtype.is_floating:
            raise ValueError(f"{model} output {output_name!r} is {spec.dtype.name} of shape {spec.shape}, not "
                             f"(batch, H) floats")
        self.dimension: int | None = spec.shape[1]

    def __call__(self, texts: Sequence[str]) -> np.ndarray:
        import tensorflow as tf

        outputs = self.function(**{self.input_name: tf.constant(list(texts), tf.string)})
        vectors = outputs[self.output_name].numpy().astype(np.float32, copy=False)
        if vectors.shape[0] != len(texts):
            raise ValueError(f"{self.model} output {self.output_name!r} gave {vectors.shape[0]} rows for "
                             f"{len(texts)} texts")
        return vectors


def text_input(function, what: str) -> str:
    """The name of a concrete function's one `tf.string` input; ValueError naming `what` otherwise."""
    import tensorflow as tf

    inputs = function.structured_input_signature[1]
    if len(inputs) != 1:
        raise ValueError(f"{what} takes {sorted(inputs)}: embedding needs a signature of one text input")
    (name, spec), = inputs.items()
    if spec.dtype != tf.string or spec.shape.rank != 1:
        raise ValueError(f"{what} takes {name!r} as {spec.dtype.name} {spec.shape}, not a batch of strings")
    return name
