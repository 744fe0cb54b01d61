"""`kbert index`: an export's encoder and an exact top-k over stored vectors, as one strings-in SavedModel."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

import kbert.file_io as file_io
from kbert.cli.main import main
from kbert.embeddings import SearchIndexConfig, build_search_index
from kbert.embeddings.embedding_files import shard_of, write_manifest, write_shard
from tests.embeddings.embed_cases import DIM, WORDS, reference, save_standin_export


def random_embeddings(root: str, model: str, count: int = 300, seed: int = 0) -> tuple[list[str], np.ndarray]:
    """`count` random vectors written as `kbert embed` writes them (2 shards); returns (ids, vectors)."""
    rng = np.random.default_rng(seed)
    vectors = rng.normal(size=(count, DIM)).astype(np.float32)
    ids = [f"doc-{i}" for i in range(count)]
    shards = [write_shard(root, s, 2, [(i, v) for i, v in zip(ids, vectors) if shard_of(i, 2) == s], DIM)
              for s in range(2)]
    write_manifest(root, {"count": count, "dimension": DIM, "model": model, "signature": "serving_default",
                          "output_name": "embedding", "shards": shards})
    return ids, vectors


def queries(count: int, seed: int = 1) -> list[str]:
    rng = np.random.default_rng(seed)
    return [" ".join(rng.choice(WORDS, size=rng.integers(1, 6))) for _ in range(count)]


def unit(x: np.ndarray) -> np.ndarray:
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


@pytest.fixture
def index(standin_export, ram_root):
    ids, vectors = random_embeddings(f"{ram_root}/emb", standin_export)
    info = build_search_index(SearchIndexConfig(f"{ram_root}/emb", out=f"{ram_root}/index/1", top_k=5))
    return ids, vectors, info, f"{ram_root}/index/1"


def test_top1_of_every_query_is_the_brute_force_answer(index, standin_export):
    import tensorflow as tf

    ids, vectors, info, out = index
    assert info["count"] == 300 and info["top_k"] == 5 and info["metric"] == "cosine"
    texts = queries(64)
    got = tf.saved_model.load(out).signatures["serving_default"](text=tf.constant(texts))
    assert got["ids"].dtype == tf.string and got["ids"].shape == (64, 5) and got["scores"].dtype == tf.float32
    scores = unit(reference(standin_export, texts)) @ unit(vectors).T  # the standin's embedding: unit already
    best = scores.argmax(axis=1)
    assert [i.decode() for i in got["ids"].numpy()[:, 0]] == [ids[b] for b in best]
    np.testing.assert_allclose(got["scores"].numpy()[:, 0], scores.max(axis=1), atol=1e-5)
    assert (np.diff(got["scores"].numpy(), axis=1) <= 0).all()  # best first


def test_search_vectors_is_the_exact_top_k(index):
    import tensorflow as tf

    ids, vectors, _, out = index
    query = np.random.default_rng(2).normal(size=(20, DIM)).astype(np.float32)
    got = tf.saved_model.load(out).signatures["search_vectors"](embedding=tf.constant(query))
    scores = unit(query) @ unit(vectors).T
    top = np.argsort(-scores, axis=1)[:, :5]
    assert [[i.decode() for i in row] for row in got["ids"].numpy()] == [[ids[j] for j in row] for row in top]
    np.testing.assert_allclose(got["scores"].numpy(), np.take_along_axis(scores, top, 1), atol=1e-5)


def test_dot_metric_and_k_larger_than_the_index(standin_export, ram_root):
    import tensorflow as tf

    ids, vectors = random_embeddings(f"{ram_root}/emb", standin_export, count=40)
    with pytest.raises(ValueError, match="top_k 41 is larger than the index: .* holds 40 vectors"):
        build_search_index(SearchIndexConfig(f"{ram_root}/emb", out=f"{ram_root}/x", top_k=41))
    assert not file_io.exists(f"{ram_root}/x")
    build_search_index(SearchIndexConfig(f"{ram_root}/emb", out=f"{ram_root}/dot", top_k=40, metric="dot"))
    query = np.random.default_rng(3).normal(size=(3, DIM)).astype(np.float32)
    got = tf.saved_model.load(f"{ram_root}/dot").signatures["search_vectors"](embedding=tf.constant(query))
    np.testing.assert_allclose(got["scores"].numpy(), -np.sort(-(query @ vectors.T), axis=1), atol=1e-5)
    assert sorted(got["ids"].numpy()[0]) == sorted(i.encode() for i in ids)  # k = N: every id once


@pytest.mark.slow
def test_cli_index_warmup_and_a_fresh_process(standin_export, tmp_path, capsys):
    """The index loads where only tensorflow and tensorflow_text are imported, and replays its warmup."""
    emb, out = str(tmp_path / "emb"), tmp_path / "models" / "search" / "1"
    ids, vectors = random_embeddings(emb, standin_export, count=50)
    assert main(["index", emb, "--model", standin_export, "--out", str(out), "--top-k", "3"]) == 0
    assert "Search index of 50 vectors (dimension 16, top 3, cosine)" in capsys.readouterr().out
    assert main(["index", emb, "--out", str(out)]) == 1
    assert "exists; pass --force" in capsys.readouterr().err
    assert sorted(os.listdir(out / "assets.extra")) == ["tf_serving_warmup_requests"]
    config = json.loads((out / "assets" / "kbert_export.json").read_text())
    assert config["task"] == "search" and config["index"]["count"] == 50
    code = ("import sys, tensorflow as tf, tensorflow_text\n"
            "from tensorflow_serving.apis import prediction_log_pb2\n"
            f"model = tf.saved_model.load({str(out)!r})\n"
            "for record in tf.data.TFRecordDataset(" + repr(str(out / "assets.extra" / "tf_serving_warmup_requests"))
            + "):\n"
            "    request = prediction_log_pb2.PredictionLog.FromString(record.numpy()).predict_log.request\n"
            "    inputs = {k: tf.make_ndarray(v) for k, v in request.inputs.items()}\n"
            "    result = model.signatures[request.model_spec.signature_name](**inputs)\n"
            "    print(request.model_spec.signature_name, result['ids'].shape)\n"
            "assert not [m for m in sys.modules if m.startswith('kbert')]\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd="/",
                          env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"), timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.split("\n")[:2] == ["serving_default (1, 3)", "search_vectors (2, 3)"]
    # `kbert predict` reads the index's config and prints ids and scores.
    assert main(["predict", str(out), "good cat", "--workers", "1"]) == 0
    answer = json.loads(capsys.readouterr().out)
    assert len(answer["ids"]) == 3 and answer["ids"][0] in ids


def test_an_export_of_another_dimension_is_an_error(standin_export, ram_root, tmp_path):
    other = save_standin_export(str(tmp_path / "dim8"), dim=8)
    random_embeddings(f"{ram_root}/emb", standin_export, count=10)
    with pytest.raises(ValueError, match="has length 8, but the vectors in .* have length 16"):
        build_search_index(SearchIndexConfig(f"{ram_root}/emb", out=f"{ram_root}/x", model=other, top_k=2))
    with pytest.raises(FileNotFoundError, match="has no manifest.json"):
        build_search_index(SearchIndexConfig(f"{ram_root}/none", out=f"{ram_root}/x"))
