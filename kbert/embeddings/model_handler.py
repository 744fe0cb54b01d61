"""`ExportModelHandler`: Beam's RunInference on a strings-in SavedModel, loaded once per worker process.

Beam's own `TFModelHandlerTensor` loads with `tf.keras.models.load_model`, which Keras 3 does not do for
a SavedModel (and it would call the model, not a named signature and output), so this handler loads it
with `Embedder` (`tf.saved_model.load`). RunInference shares the loaded model between the threads of a
worker and loads it again only in a new process.

Elements are whole batches (`with_no_batching()`): `embed_corpus_beam` forms them from the input's own
order, so the vectors do not depend on how RunInference's `BatchElements` would size batches on a runner.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
from apache_beam.ml.inference.base import ModelHandler

from kbert.embeddings.corpus_rows import Row
from kbert.embeddings.embedder import Embedder


class ExportModelHandler(ModelHandler[Row, tuple[str, np.ndarray], Embedder]):
    """Loads an export's signature once per worker and embeds each batch of `Row`s.

    Args:
        model: str. The SavedModel directory (a path every worker can read: a URL on a cluster).
        output_name: str. The output holding the vectors.
        signature: str. The signature to call.

    Call arguments (`run_inference`):
        batch: Sequence[Row]. Rows to embed (their `text`).
        model: Embedder. What `load_model` returned.

    Returns:
        `(id, vector)` per row, in order; the vector a float32 array of length H.

    Example:
        >>> handler = ExportModelHandler("gs://b/export/minilm", "mean_embedding")  # doctest: +SKIP
        >>> batches | RunInference(handler.with_no_batching())  # doctest: +SKIP
    """

    def __init__(self, model: str, output_name: str = "embedding", signature: str = "serving_default") -> None:
        super().__init__()
        self.model, self.output_name, self.signature = model, output_name, signature

    def load_model(self) -> Embedder:
        return Embedder(self.model, self.output_name, self.signature)

    def run_inference(self, batch: Sequence[Row], model: Embedder,
                      inference_args: dict[str, Any] | None = None) -> Iterable[tuple[str, np.ndarray]]:
        vectors = model([row.text for row in batch])
        return [(row.id, vector) for row, vector in zip(batch, vectors)]

    def get_metrics_namespace(self) -> str:
        return "kbert_embed"
