"""`kbert embed` in one process: every row a vector or a counted skip, deterministic Parquet shards, ram://."""

from __future__ import annotations

import sys

import numpy as np
import pytest

import kbert
import kbert.file_io as file_io
from kbert.cli.main import main
from kbert.embeddings import EmbedConfig, embed_corpus, read_manifest
from tests.embeddings.embed_cases import reference, shard_bytes, write_corpus


def test_every_row_is_a_vector_or_a_counted_skip(standin_export, ram_root):
    kept = write_corpus(ram_root)
    config = EmbedConfig(model=standin_export, input=[f"{ram_root}/in/*.jsonl", f"{ram_root}/in/*.csv"],
                         out=f"{ram_root}/out", batch_size=8, num_shards=3)
    manifest = embed_corpus(config)
    assert manifest["rows_read"] == 90 + 21
    assert manifest["skipped"] == {"bad_utf8": 1, "empty_text": 1, "missing_id": 1, "duplicate_id": 2}
    assert manifest["count"] == len(kept) == manifest["rows_read"] - 5
    assert manifest["examples"]["duplicate_id"] == [
        f"{ram_root}/in/a.jsonl:7: duplicate id 'j0' (the row kept is {ram_root}/in/a.jsonl:1)",
        f"{ram_root}/in/b.csv:22: duplicate id 'j1' (the row kept is {ram_root}/in/a.jsonl:2)"]
    assert manifest["examples"]["bad_utf8"] == [f"{ram_root}/in/a.jsonl:6: 'text' is not valid UTF-8"]
    assert read_manifest(f"{ram_root}/out") == {k: v for k, v in manifest.items() if k != "seconds"}
    ids, vectors = kbert.load_embeddings(f"{ram_root}/out")
    assert sorted(ids) == sorted(kept) and vectors.dtype == np.float32 and vectors.shape == (len(kept), 16)
    np.testing.assert_allclose(vectors, reference(standin_export, [kept[i] for i in ids]), atol=1e-6)
    # Each shard sorted by id; the shards in the manifest's order.
    bounds = np.cumsum([0] + [s["count"] for s in manifest["shards"]])
    for start, stop in zip(bounds, bounds[1:]):
        assert ids[start:stop] == sorted(ids[start:stop], key=str.encode)


def test_shards_are_plain_parquet(standin_export, ram_root):
    pq = pytest.importorskip("pyarrow.parquet")
    import pyarrow as pa

    kept = write_corpus(ram_root, rows=30)
    embed_corpus(EmbedConfig(model=standin_export, input=[f"{ram_root}/in/*"], out=f"{ram_root}/out",
                             num_shards=2))
    manifest = file_io.read_json(f"{ram_root}/out/manifest.json")
    assert sorted(file_io.listdir(f"{ram_root}/out")) == [
        "manifest.json", "part-00000-of-00002.parquet", "part-00001-of-00002.parquet"]
    tables = [pq.read_table(pa.BufferReader(file_io.read_bytes(f"{ram_root}/out/{s['file']}")))
              for s in manifest["shards"]]
    assert all(t.schema.field("embedding").type == pa.list_(pa.float32(), 16) for t in tables)
    assert all(t.schema.field("id").type == pa.string() for t in tables)
    got = {i: v for t in tables for i, v in zip(t.column("id").to_pylist(), t.column("embedding").to_pylist())}
    assert sorted(got) == sorted(kept) and manifest["count"] == len(kept) and manifest["dimension"] == 16
    ids = sorted(kept)
    np.testing.assert_allclose(np.array([got[i] for i in ids]), reference(standin_export, [kept[i] for i in ids]),
                               atol=1e-6)


def test_same_input_same_bytes_whatever_the_workers(standin_export, ram_root):
    write_corpus(ram_root)
    outputs = []
    for name, workers in (("a", 1), ("b", 3)):
        config = EmbedConfig(model=standin_export, input=[f"{ram_root}/in/*"], out=f"{ram_root}/{name}",
                             batch_size=5, workers=workers)
        embed_corpus(config)
        outputs.append(shard_bytes(f"{ram_root}/{name}"))
    shards = {k: v for k, v in outputs[0].items() if k != "manifest.json"}
    assert len(shards) == 4 and all(shards.values())
    assert {k: v for k, v in outputs[1].items() if k != "manifest.json"} == shards


def test_output_name_and_mistakes(standin_export, ram_root, capsys):
    kept = write_corpus(ram_root, rows=12)
    out = f"{ram_root}/out"
    argv = ["embed", standin_export, "--input", f"{ram_root}/in/*", "--out", out, "--output-name", "mean_embedding"]
    assert main(argv) == 0
    captured = capsys.readouterr()
    assert f"Embedded {len(kept)} of 25 rows (dimension 16) into 4 Parquet shard(s) in {out}" in captured.out
    assert "Skipped: 1 bad utf8, 1 empty text, 1 missing id, 2 duplicate id" in captured.err
    assert f"{ram_root}/in/a.jsonl:5: no id: 'id' is absent" in captured.err
    ids, vectors = kbert.load_embeddings(out)
    np.testing.assert_allclose(vectors, reference(standin_export, [kept[i] for i in ids], "mean_embedding"),
                               atol=1e-6)
    assert main(argv) == 1 and "exists and is not empty; pass --force" in capsys.readouterr().err
    assert main(argv + ["--force", "--num-shards", "1"]) == 0
    assert file_io.listdir(out) == ["manifest.json", "part-00000-of-00001.parquet"]  # the old shards are gone
    capsys.readouterr()
    assert main(argv[:-1] + ["nope", "--force"]) == 1
    error = capsys.readouterr().err
    assert "has no output 'nope'; its outputs are ['embedding', 'mean_embedding', 'pooled_output']" in error
    assert main(argv + ["--force", "--signature", "other"]) == 1
    assert "has no signature 'other'; it has ['serving_default']" in capsys.readouterr().err
    assert main(argv + ["--force", "--runner=DirectRunner"]) == 2
    assert "pipeline options need --beam" in capsys.readouterr().err
    assert main(["embed", f"{ram_root}/in", "--input", f"{ram_root}/in/*", "--out", f"{ram_root}/o2"]) == 1
    assert "is not a SavedModel directory" in capsys.readouterr().err
    assert main(["embed", standin_export, "--input", f"{ram_root}/none/*.jsonl", "--out", f"{ram_root}/o3"]) == 1
    assert "No input file matches" in capsys.readouterr().err


def test_a_corpus_without_one_good_row_is_an_error(standin_export, ram_root):
    file_io.write_text(f"{ram_root}/in/a.jsonl", '{"id": "a", "text": ""}\n{"text": "x"}\n')
    config = EmbedConfig(model=standin_export, input=[f"{ram_root}/in/a.jsonl"], out=f"{ram_root}/out")
    with pytest.raises(ValueError, match=r"gives a vector \(1 empty_text, 1 missing_id\)"):
        embed_corpus(config)
    assert not file_io.exists(f"{ram_root}/out/manifest.json")


def test_without_pyarrow_the_error_says_how_to_install_it(standin_export, ram_root, monkeypatch, capsys):
    write_corpus(ram_root, rows=8)
    monkeypatch.setitem(sys.modules, "pyarrow", None)  # `import pyarrow` now raises ImportError
    assert main(["embed", standin_export, "--input", f"{ram_root}/in/*", "--out", f"{ram_root}/out"]) == 2
    assert "pip install pyarrow" in capsys.readouterr().err
    assert not file_io.exists(f"{ram_root}/out")


def test_batches_are_sorted_by_length_within_each_window(standin_export, ram_root, monkeypatch):
    """Rows are cut into batches longest first within windows of `sort_window` batches (bounded memory), every
    kept row once; `sort_window=1` keeps consecutive rows; the vectors are the same either way."""
    from kbert.embeddings.embedder import Embedder

    kept = write_corpus(ram_root)
    seen: list[list[str]] = []
    call = Embedder.__call__
    monkeypatch.setattr(Embedder, "__call__", lambda self, texts: seen.append(list(texts)) or call(self, texts))
    vectors, batches = {}, {}
    for window in (1, 3):
        seen.clear()
        out = f"{ram_root}/w{window}"
        manifest = embed_corpus(EmbedConfig(model=standin_export, input=[f"{ram_root}/in/a.jsonl"], out=out,
                                            batch_size=4, sort_window=window, workers=1))
        assert manifest["sort_window"] == window
        batches[window] = [list(batch) for batch in seen]
        ids, found = kbert.load_embeddings(out)
        vectors[window] = dict(zip(ids, found))
    texts = [t for i, t in kept.items() if i.startswith("j")]
    assert [t for batch in batches[1] for t in batch] == texts  # consecutive rows, in input order
    assert sorted(t for batch in batches[3] for t in batch) == sorted(texts)
    # Rows of one window of 12 (less the skipped ones) go longest first; the next window starts over.
    first_window = [t for batch in batches[3][:2] for t in batch]
    assert [len(t) for t in first_window] == sorted((len(t) for t in first_window), reverse=True)
    padding = {w: sum(max(map(len, b)) * len(b) - sum(map(len, b)) for b in batches[w]) for w in batches}
    assert padding[3] < padding[1] / 2
    assert vectors[1].keys() == vectors[3].keys()
    for key, vector in vectors[1].items():
        np.testing.assert_allclose(vectors[3][key], vector, atol=1e-6)
