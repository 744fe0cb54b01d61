"""`SearchModule`: an export's encoder and an exact top-k over stored vectors, as one strings-in SavedModel."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import tensorflow as tf

from kbert.embeddings.index_config import METRICS


class SearchModule(tf.Module):
    """Texts in, the ids and scores of the k nearest stored vectors out: `kbert index`'s SavedModel.

    The query encoder is the export's own signature, called inside this module's functions, so the saved
    graph holds the tokenizer, the encoder and the search together and needs only TensorFlow and
    tensorflow-text to load. The search is exact: one product of the queries with every stored vector
    (`tf.linalg.matmul`), then `tf.math.top_k`. Vectors and ids are variables (in `variables/`, not in the
    graph, which a protocol buffer caps at 2 GB).

    Signatures:
        serving_default(text: string [batch]) -> ids (batch, k) string, scores (batch, k) float32
        search_vectors(embedding: float32 [batch, H]) -> ids, scores: the search alone, for a query that
            is already a vector (it is normalised too under "cosine")

    Args:
        encoder: the loaded export (`tf.saved_model.load`), tracked so that its weights are saved here.
        signature: str. Its signature to call; one string input.
        output_name: str. The signature's output holding the query vector.
        vectors: `(N, H)` float32 array. The stored vectors.
        ids: Sequence[str]. Their N ids.
        top_k: int. k, at most N.
        metric: str. "cosine": stored and query vectors are L2-normalised (the inner product is then the
            cosine); "dot": the raw inner product.

    Raises:
        ValueError: `top_k` is not in [1, N], the lengths disagree, or an unknown metric.

    Example:
        >>> encoder = tf.saved_model.load("export/minilm")  # doctest: +SKIP
        >>> module = SearchModule(encoder, "serving_default", "mean_embedding", vectors, ids, top_k=10)  # doctest: +SKIP
        >>> tf.saved_model.save(module, "index", signatures=module.signatures())  # doctest: +SKIP
    """

    def __init__(self, encoder, signature: str, output_name: str, vectors: np.ndarray, ids: Sequence[str],
                 top_k: int = 10, metric: str = "cosine") -> None:
        super().__init__(name="kbert_search")
        from kbert.embeddings.embedder import text_input

        vectors = np.asarray(vectors, np.float32)
        if metric not in METRICS:
            raise ValueError(f"metric must be one of {list(METRICS)}, got {metric!r}")
        if vectors.ndim != 2 or vectors.shape[0] != len(ids):
            raise ValueError(f"{len(ids)} ids for vectors of shape {vectors.shape}")
        if not 1 <= top_k <= len(ids):
            raise ValueError(f"top_k must be between 1 and the {len(ids)} stored vectors, got {top_k}")
        if metric == "cosine":
            vectors = vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
        self.encoder, self.top_k, self.metric = encoder, int(top_k), metric
        encode = encoder.signatures[signature]
        input_name = text_input(encode, f"signature {signature!r}")
        dimension = vectors.shape[1]
        self.vectors = tf.Variable(vectors, trainable=False, name="vectors")
        self.ids = tf.Variable(np.asarray(list(ids), dtype=object), dtype=tf.string, trainable=False, name="ids")

        @tf.function(input_signature=[tf.TensorSpec([None, dimension], tf.float32, name="embedding")])
        def search_vectors(embedding):
            queries = tf.math.l2_normalize(embedding, axis=1) if metric == "cosine" else embedding
            products = tf.linalg.matmul(queries, self.vectors, transpose_b=True)  # (batch, N)
            scores, indices = tf.math.top_k(products, k=self.top_k)
            return {"ids": tf.gather(self.ids, indices), "scores": scores}

        @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="text")])
        def serving_default(text):
            embedding = tf.cast(encode(**{input_name: text})[output_name], tf.float32)
            return search_vectors(tf.ensure_shape(embedding, [None, dimension]))

        self.search_vectors, self.serving_default = search_vectors, serving_default

    def signatures(self) -> dict:
        """`{signature name: tf.function}` for `tf.saved_model.save(..., signatures=...)`."""
        return {"serving_default": self.serving_default, "search_vectors": self.search_vectors}
