"""The embedding metrics against sentence-transformers' evaluators, on one model's embeddings of the same texts."""

import itertools

import numpy as np
import pytest

from kbert.metrics.embedding import paired_cosine, retrieval_metrics, similarity_metrics
from tests.conftest import TINY_VOCAB

WORDS = ["the", "cat", "sat", "on", "mat", "dog", "ran", "a", "good", "bad"]


@pytest.fixture(scope="module")
def st_model(tmp_path_factory):
    """A sentence-transformers model (random tiny BERT, mean pooling) built with its own classes."""
    transformers = pytest.importorskip("transformers")
    pytest.importorskip("sentence_transformers")
    import torch
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.base.modules import Transformer
    from sentence_transformers.sentence_transformer.modules import Pooling

    torch.manual_seed(0)
    directory = tmp_path_factory.mktemp("tiny_bert")
    config = transformers.BertConfig(vocab_size=len(TINY_VOCAB), hidden_size=16, num_hidden_layers=1,
                                     num_attention_heads=2, intermediate_size=32, max_position_embeddings=32)
    transformers.BertModel(config).save_pretrained(directory)
    (directory / "vocab.txt").write_text("\n".join(TINY_VOCAB) + "\n")
    transformers.BertTokenizerFast(str(directory / "vocab.txt")).save_pretrained(directory)
    return SentenceTransformer(modules=[Transformer(str(directory)), Pooling(16, pooling_mode="mean")], device="cpu")


def sentences(n: int, seed: int) -> list[str]:
    rng = np.random.default_rng(seed)
    seen, out = set(), []
    for _ in itertools.count():
        text = " ".join(rng.choice(WORDS, size=rng.integers(2, 7)))
        if text not in seen:
            seen.add(text)
            out.append(text)
        if len(out) == n:
            return out


def test_similarity_metrics_equal_embedding_similarity_evaluator(st_model):
    from sentence_transformers.sentence_transformer.evaluation import EmbeddingSimilarityEvaluator

    first, second = sentences(30, 0), sentences(30, 1)
    scores = np.random.default_rng(2).uniform(0, 5, size=30).tolist()
    reference = EmbeddingSimilarityEvaluator(first, second, scores, similarity_fn_names=["cosine"],
                                             write_csv=False)(st_model)
    ours = similarity_metrics(st_model.encode(first), st_model.encode(second), scores)
    assert ours["pearson"] == pytest.approx(reference["pearson_cosine"], abs=1e-6)
    assert ours["spearman"] == pytest.approx(reference["spearman_cosine"], abs=1e-6)
    assert abs(ours["spearman"]) > 0.01  # not a degenerate case


@pytest.mark.parametrize("documents", [40, 7])  # more documents than the cut-off, and fewer
def test_retrieval_metrics_equal_information_retrieval_evaluator(st_model, documents):
    from sentence_transformers.sentence_transformer.evaluation import InformationRetrievalEvaluator

    queries, corpus = sentences(documents, 3), sentences(documents, 4)
    reference = InformationRetrievalEvaluator(
        {str(i): q for i, q in enumerate(queries)}, {str(i): d for i, d in enumerate(corpus)},
        {str(i): {str(i)} for i in range(documents)}, mrr_at_k=[1, 10], ndcg_at_k=[1, 10],
        precision_recall_at_k=[1, 10], score_functions=None, write_csv=False)(st_model)
    ours = retrieval_metrics(st_model.encode(queries), st_model.encode(corpus), recall_at=(1, 10), mrr_at=(1, 10),
                             ndcg_at=(1, 10))
    assert len(ours) == 6
    for name, value in ours.items():
        assert value == pytest.approx(reference[f"cosine_{name}"], abs=1e-6), name
    assert 0 < ours["recall@1"] < ours["recall@10"] <= 1


def test_several_relevant_documents_by_hand():
    queries = np.array([[1.0, 0.0]])
    documents = np.array([[1.0, 0.1], [0.0, 1.0], [1.0, 0.5]])  # ranks: 0, 2, 1
    metrics = retrieval_metrics(queries, documents, relevant=[{1, 2}], recall_at=(1, 2), mrr_at=(2,), ndcg_at=(2,))
    assert metrics["recall@1"] == 0 and metrics["recall@2"] == 0.5
    assert metrics["mrr@2"] == 0.5
    assert metrics["ndcg@2"] == pytest.approx((1 / np.log2(3)) / (1 + 1 / np.log2(3)))


def test_bad_shapes_are_errors():
    with pytest.raises(ValueError, match="3 scores for 2 pairs"):
        similarity_metrics(np.ones((2, 4)), np.ones((2, 4)), [1, 2, 3])
    with pytest.raises(ValueError, match="2 queries and 3 documents"):
        retrieval_metrics(np.ones((2, 4)), np.ones((3, 4)))
    with pytest.raises(ValueError, match="one shape"):
        paired_cosine(np.ones((2, 4)), np.ones((2, 3)))
