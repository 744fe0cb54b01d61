"""The config file of a kbert export, `assets/kbert_export.json`, read back without TensorFlow.

`kbert.export.savedmodel` writes it from the task:

    {"task": NAME, "labels": [...] or null, "sequence_length": 128, "truncate": "round_robin",
     "pair": false, "tokenizer": {its tokenizer_config.json}, "precision": "float32",
     "signatures": {SIGNATURE: {"inputs": [input names in call order],
                                "outputs": [output names, sorted],
                                "trim": {COUNT OUTPUT: [outputs padded past each row's count]}}}}

`kbert predict` takes positional texts in the order of "inputs" and cuts the "trim" outputs of each row
to its count. Exports written before the signatures were described hold "signatures" as a list of
names; for them `signature_spec` is None.

Example:
>>> spec = signature_spec({"signatures": {"serving_default": {"inputs": ["text"], "trim": {}}}},
...                       "serving_default")
>>> spec["inputs"]
['text']
>>> signature_spec({"signatures": ["serving_default"]}, "serving_default") is None
True
"""

from __future__ import annotations

import json
import os
from typing import Any

import kbert.file_io as file_io

CONFIG_FILE = "kbert_export.json"
TFLITE_SUFFIX = ".tflite"


def config_path(export: str | os.PathLike) -> str:
    """`EXPORT/assets/kbert_export.json` of a SavedModel directory, or of the directory a `.tflite` file
    sits in (`EXPORT/model.tflite`)."""
    export = file_io.fspath(export).rstrip("/")
    if export.endswith(TFLITE_SUFFIX):
        export = file_io.dirname(export)
    return file_io.join(export, "assets", CONFIG_FILE)


def read_export_config(export: str | os.PathLike) -> dict[str, Any]:
    """The config of an export (a SavedModel directory, or a `.tflite` file inside one).

    Args:
        export: the export directory or its `.tflite` file; a local path or a URL.

    Returns:
        The config as a dict; `{}` when the export has none (a lone `.tflite` file).

    Raises:
        ValueError: the config file is not a JSON object.
    """
    path = config_path(export)
    if not file_io.is_local(path):
        config = file_io.read_json(path) if file_io.isfile(path) else {}
    else:
        # A local file is read with `open`: running a local `.tflite` file loads no TensorFlow (gfile).
        try:
            with open(path, encoding="utf-8") as handle:
                config = json.load(handle)
        except FileNotFoundError:
            config = {}
    if not isinstance(config, dict):
        raise ValueError(f"{path}: expected a JSON object, got {type(config).__name__}")
    return config


def signature_spec(config: dict[str, Any], signature: str) -> dict[str, Any] | None:
    """What the config records for one signature: `{"inputs": [...], "outputs": [...], "trim": {...}}`;
    None when it records nothing for it (no config, an older export or another signature)."""
    signatures = config.get("signatures")
    if not isinstance(signatures, dict) or not isinstance(signatures.get(signature), dict):
        return None
    return signatures[signature]
