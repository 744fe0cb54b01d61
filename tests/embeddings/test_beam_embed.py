"""`kbert embed --beam`: the one-process path's files, written by an Apache Beam pipeline (DirectRunner)."""

from __future__ import annotations

import os
import pathlib
import sys

import numpy as np
import pytest

import kbert
import kbert.file_io as file_io
from kbert.cli.main import main
from tests.embeddings.embed_cases import shard_bytes, write_corpus

REPO = pathlib.Path(__file__).resolve().parents[2]


@pytest.fixture
def beam():
    return pytest.importorskip("apache_beam")


def embed(export, root, out, *extra):
    return main(["embed", export, "--input", f"{root}/in/*", "--out", out, "--batch-size", "7",
                 "--num-shards", "3", *extra])


def test_beam_with_two_workers_writes_the_one_process_files(beam, standin_export, ram_root, capsys):
    write_corpus(ram_root, rows=40)
    assert embed(standin_export, ram_root, f"{ram_root}/one") == 0
    assert embed(standin_export, ram_root, f"{ram_root}/beam", "--beam", "--runner=DirectRunner",
                 "--direct_num_workers=2", "--direct_running_mode=in_memory") == 0
    one, par = file_io.read_json(f"{ram_root}/one/manifest.json"), file_io.read_json(f"{ram_root}/beam/manifest.json")
    assert par == one | {"inputs": par["inputs"]} and par["inputs"] == one["inputs"]
    assert par["skipped"] == {"bad_utf8": 1, "empty_text": 1, "missing_id": 1, "duplicate_id": 2}
    ids_one, vectors_one = kbert.load_embeddings(f"{ram_root}/one")
    ids_beam, vectors_beam = kbert.load_embeddings(f"{ram_root}/beam")
    assert ids_beam == ids_one and len(ids_one) == one["count"] > 50
    np.testing.assert_allclose(vectors_beam, vectors_one, atol=1e-5)
    # The same batches through the same export: here, byte for byte the same shards.
    assert shard_bytes(f"{ram_root}/beam") == shard_bytes(f"{ram_root}/one")
    assert "Embedded" in capsys.readouterr().out


def test_beam_without_apache_beam_names_the_extra(standin_export, ram_root, monkeypatch, capsys):
    write_corpus(ram_root, rows=8)
    monkeypatch.setitem(sys.modules, "apache_beam", None)  # `import apache_beam` now raises ImportError
    assert embed(standin_export, ram_root, f"{ram_root}/out", "--beam") == 2
    assert "pip install 'kbert[beam]'" in capsys.readouterr().err


def test_beam_on_an_empty_corpus_leaves_no_manifest(beam, standin_export, ram_root, capsys):
    file_io.write_text(f"{ram_root}/in/a.jsonl", '{"id": "a", "text": " "}\n')
    assert embed(standin_export, ram_root, f"{ram_root}/out", "--beam") == 1
    assert "no row of" in capsys.readouterr().err
    assert not file_io.exists(f"{ram_root}/out/manifest.json")


@pytest.mark.slow
def test_two_worker_processes(beam, standin_export, tmp_path, monkeypatch):
    # The DirectRunner's worker processes import kbert: they get this checkout on their path. ram:// is one
    # process's memory, so this run is on the local disk.
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
    write_corpus(str(tmp_path))
    assert embed(standin_export, tmp_path, str(tmp_path / "one")) == 0
    assert embed(standin_export, tmp_path, str(tmp_path / "two"), "--beam", "--direct_num_workers=2",
                 "--direct_running_mode=multi_processing") == 0
    assert shard_bytes(str(tmp_path / "two")) == shard_bytes(str(tmp_path / "one"))
