"""`kbert.file_io` on ram:// (TensorFlow's in-memory file system, the stand-in for gs://) and on the local disk."""

from __future__ import annotations

import uuid

import numpy as np
import pytest

import kbert.file_io as file_io


@pytest.fixture
def root() -> str:
    return f"ram://kbert-file-io-{uuid.uuid4().hex[:8]}"


def test_text_json_and_bytes_round_trip_and_create_directories(root):
    file_io.write_text(f"{root}/a/b/c.txt", "caf\u00e9\r\nok\n")
    assert file_io.isdir(f"{root}/a/b") and file_io.listdir(f"{root}/a") == ["b"]
    assert file_io.read_text(f"{root}/a/b/c.txt") == "caf\u00e9\r\nok\n"
    assert list(file_io.text_stream(f"{root}/a/b/c.txt")) == ["caf\u00e9\n", "ok\n"]  # universal newlines
    file_io.write_json(f"{root}/x.json", {"a": [1, 2]})
    assert file_io.read_json(f"{root}/x.json") == {"a": [1, 2]}
    file_io.write_bytes(f"{root}/x.bin", b"\x00\x01")
    assert file_io.read_bytes(f"{root}/x.bin") == b"\x00\x01" and file_io.size(f"{root}/x.bin") == 2
    file_io.write_text(f"{root}/bad.json", "{not json")
    with pytest.raises(ValueError, match=f"{root}/bad.json"):
        file_io.read_json(f"{root}/bad.json")


def test_errors_name_the_url(root):
    for read in (file_io.read_text, file_io.read_bytes, file_io.size, file_io.listdir):
        with pytest.raises(FileNotFoundError, match=f"{root}/missing"):
            read(f"{root}/missing")
    with pytest.raises(FileNotFoundError, match=f"{root}/missing"):
        file_io.copy(f"{root}/missing", f"{root}/copy")


def test_glob_with_double_star_on_ram_and_local(root, tmp_path, monkeypatch):
    for name in ("a/x.txt", "a/d/y.txt", "z.txt", "a/w.md"):
        file_io.write_text(f"{root}/{name}", name)
    assert file_io.glob(f"{root}/**/*.txt") == [f"{root}/a/d/y.txt", f"{root}/a/x.txt", f"{root}/z.txt"]
    assert file_io.glob(f"{root}/a/*.txt") == [f"{root}/a/x.txt"]
    assert file_io.glob(f"{root}/a/**/y.txt") == [f"{root}/a/d/y.txt"]
    (tmp_path / "q" / "r").mkdir(parents=True)
    (tmp_path / "q" / "r" / "s.txt").write_text("s")
    monkeypatch.chdir(tmp_path)
    assert file_io.glob("**/*.txt") == ["q/r/s.txt"]
    assert file_io.glob(str(tmp_path / "q" / "**" / "*.txt")) == [str(tmp_path / "q" / "r" / "s.txt")]


def test_move_dir_and_rmtree_with_a_name_that_prefixes_another(root):
    # ram:// lists "assets.extra/w" inside "assets" as a phantom ".extra"; a SavedModel has both names.
    for name in ("assets/vocab.txt", "assets.extra/w", "variables/v.index", "saved_model.pb"):
        file_io.write_text(f"{root}/.tmp/{name}", name)
    file_io.move_dir(f"{root}/.tmp", f"{root}/1")
    assert not file_io.exists(f"{root}/.tmp/saved_model.pb")
    for name in ("assets/vocab.txt", "assets.extra/w", "variables/v.index", "saved_model.pb"):
        assert file_io.read_text(f"{root}/1/{name}") == name
    file_io.rmtree(f"{root}/1")
    assert file_io.glob(f"{root}/**") == []
    file_io.rmtree(f"{root}/never-there")  # fine


def test_local_move_dir_is_one_rename(tmp_path):
    (tmp_path / "src" / "sub").mkdir(parents=True)
    (tmp_path / "src" / "sub" / "f").write_text("f")
    file_io.move_dir(tmp_path / "src", tmp_path / "dst")
    assert (tmp_path / "dst" / "sub" / "f").read_text() == "f" and not (tmp_path / "src").exists()


def test_paths(root):
    assert file_io.join(root, "a", "b") == f"{root}/a/b"
    assert file_io.dirname(f"{root}/a/b/") == f"{root}/a" and file_io.dirname("ram://bucket") == "ram://"
    assert file_io.dirname("vocab.txt") == "." and file_io.basename(f"{root}/a/") == "a"
    assert file_io.is_local("/tmp/x") and file_io.is_local("vocab.txt") and not file_io.is_local(root)
    assert not file_io.is_local("file:///tmp/x")  # a URL: gfile reads it, `open` and `os.path` would not
    assert file_io.temp_sibling(f"{root}/models/1").startswith(f"{root}/models/.1.tmp-")
    assert file_io.same_file(f"{root}/a/", f"{root}/a") and not file_io.same_file(f"{root}/a", f"{root}/b")


def test_keras_model_loads_from_ram_without_a_local_copy(root, tmp_path, monkeypatch):
    import keras
    from keras.src.saving import saving_lib

    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
    model.save(f"{root}/m.keras")  # Keras zips a URL in memory
    monkeypatch.setattr(saving_lib, "get_temp_dir", lambda: pytest.fail("a local copy was made"))
    loaded = file_io.load_keras_model(f"{root}/m.keras", compile=False)
    x = np.ones((1, 3), np.float32)
    np.testing.assert_array_equal(loaded(x), model(x))


def test_iter_lines_across_chunk_boundaries(root):
    text = b"ab\ncd\r\n\nlast"
    file_io.write_bytes(f"{root}/lines.txt", text)
    for chunk_size in (1, 2, 3, 100):
        assert list(file_io.iter_lines(f"{root}/lines.txt", chunk_size)) == [b"ab\n", b"cd\r\n", b"\n", b"last"]
    file_io.write_bytes(f"{root}/empty.txt", b"")
    assert list(file_io.iter_lines(f"{root}/empty.txt")) == []
