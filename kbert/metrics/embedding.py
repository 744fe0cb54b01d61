"""Sentence-embedding metrics: similarity correlation with gold scores (STS) and retrieval over text pairs.

Numpy only. The definitions are sentence-transformers' `EmbeddingSimilarityEvaluator` (Pearson and Spearman
correlation of the cosine similarities with the scores) and `InformationRetrievalEvaluator` (recall, MRR and
NDCG at a cut-off, with binary relevance), on embeddings computed once.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

import numpy as np

from kbert.metrics.classification import pearson, spearman



def unit_rows(vectors: np.ndarray) -> np.ndarray:
    """Each row divided by its L2 norm (at least 1e-12, as torch's `F.normalize`), in float64."""
    vectors = np.asarray(vectors, np.float64)
    return vectors / np.maximum(np.linalg.norm(vectors, axis=-1, keepdims=True), 1e-12)


def paired_cosine(first: np.ndarray, second: np.ndarray) -> np.ndarray:
    """`(n,)` cosine similarity of each row of `first` with the same row of `second`.

    Example:
    >>> paired_cosine(np.array([[1.0, 0.0], [1.0, 1.0]]), np.array([[2.0, 0.0], [0.0, -3.0]])).round(4).tolist()
    [1.0, -0.7071]
    """
    first, second = _same_shape(first, second)
    return np.sum(unit_rows(first) * unit_rows(second), axis=-1)


def similarity_metrics(first: np.ndarray, second: np.ndarray, scores: Sequence[float]) -> dict[str, float]:
    """STS metrics: how well the cosine similarity of each pair follows its gold score.

    Args:
        first: `(n, dim)` embeddings of the first texts.
        second: `(n, dim)` embeddings of the second texts.
        scores: n gold similarity scores (any scale, e.g. STS-B's 0-5).

    Returns:
        {"pearson", "spearman"}: the correlations of the cosine similarities with `scores`.

    Example:
    >>> first = np.array([[1.0, 0.0], [1.0, 0.0], [1.0, 0.0]])
    >>> second = np.array([[1.0, 0.1], [1.0, 1.0], [0.0, 1.0]])
    >>> similarity_metrics(first, second, [5.0, 3.0, 0.5])["spearman"]
    1.0
    """
    cosine = paired_cosine(first, second)
    scores = np.asarray(scores, np.float64)
    if scores.shape != cosine.shape:
        raise ValueError(f"{len(scores)} scores for {len(cosine)} pairs")
    return {"pearson": pearson(scores, cosine), "spearman": spearman(scores, cosine)}


def retrieval_metrics(queries: np.ndarray, documents: np.ndarray,
                      relevant: Sequence[Collection[int]] | None = None, *, recall_at: Sequence[int] = (1, 10),
                      mrr_at: Sequence[int] = (10,), ndcg_at: Sequence[int] = (10,),
                      chunk: int = 1024) -> dict[str, float]:
    """Retrieval by cosine similarity: every query ranks every document.

    Args:
        queries: `(q, dim)` query embeddings.
        documents: `(d, dim)` document embeddings.
        relevant: for each query, the indices of its relevant documents; None: query i's own document is
            document i (text pairs: each first text looks for its own second text among all of them).
        recall_at: the ranks k of `recall@k`: the share of a query's relevant documents in its top k.
        mrr_at: the ranks k of `mrr@k`: 1 / the rank of its first relevant document in the top k (0 if none).
        ndcg_at: the ranks k of `ndcg@k`: the discounted gain of its top k over the best possible.
        chunk: queries scored at once (memory: `chunk * d` similarities).

    Returns:
        {"recall@k", "mrr@k", "ndcg@k"}, each averaged over the queries.

    Example:
    >>> queries = np.array([[1.0, 0.0], [0.0, 1.0]])
    >>> documents = np.array([[1.0, 0.5], [1.0, -1.0]])  # query 1 finds document 0 first, its own second
    >>> retrieval_metrics(queries, documents, recall_at=(1,), mrr_at=(2,), ndcg_at=())
    {'recall@1': 0.5, 'mrr@2': 0.75}
    """
    queries, documents = unit_rows(queries), unit_rows(documents)
    if queries.ndim != 2 or documents.ndim != 2 or queries.shape[1] != documents.shape[1]:
        raise ValueError(f"queries {queries.shape} and documents {documents.shape} must be (n, dim) of one dim")
    if relevant is None:
        if len(queries) != len(documents):
            raise ValueError(f"{len(queries)} queries and {len(documents)} documents: without `relevant`, query i's "
                             f"document is document i")
        relevant = [{i} for i in range(len(queries))]
    if len(relevant) != len(queries):
        raise ValueError(f"{len(relevant)} sets of relevant documents for {len(queries)} queries")
    if not len(queries) or any(not docs for docs in relevant):
        raise ValueError("every query needs at least one relevant document")
    names = [(f"recall@{k}", k) for k in recall_at] + [(f"mrr@{k}", k) for k in mrr_at] + \
        [(f"ndcg@{k}", k) for k in ndcg_at]
    depth = min(max(k for _, k in names), len(documents))
    sums = dict.fromkeys((name for name, _ in names), 0.0)
    for start in range(0, len(queries), chunk):
        similarity = queries[start:start + chunk] @ documents.T  # (chunk, d)
        top = np.argpartition(-similarity, depth - 1, axis=1)[:, :depth]
        order = np.take_along_axis(top, np.argsort(-np.take_along_axis(similarity, top, 1), 1, kind="stable"), 1)
        for row, ranked in enumerate(order):
            wanted = relevant[start + row]
            hits = np.array([int(doc) in wanted for doc in ranked], np.float64)
            gains = hits / np.log2(np.arange(len(hits)) + 2)
            for name, k in names:
                if name.startswith("recall"):
                    sums[name] += hits[:k].sum() / len(wanted)
                elif name.startswith("mrr"):
                    first = np.flatnonzero(hits[:k])
                    sums[name] += 1.0 / (first[0] + 1) if len(first) else 0.0
                else:
                    sums[name] += gains[:k].sum() / np.sum(1.0 / np.log2(np.arange(min(len(wanted), k)) + 2))
    return {name: float(total / len(queries)) for name, total in sums.items()}


def _same_shape(first: np.ndarray, second: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    first, second = np.asarray(first), np.asarray(second)
    if first.shape != second.shape or first.ndim != 2:
        raise ValueError(f"expected two (n, dim) arrays of one shape, got {first.shape} and {second.shape}")
    return first, second
