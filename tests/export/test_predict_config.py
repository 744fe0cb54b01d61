"""`kbert predict` takes the input order and the per-row trimming from the export's kbert_export.json."""

from __future__ import annotations

import json
import pathlib
import shutil
import sys

import numpy as np
import pytest
import tensorflow as tf

from kbert.cli.main import main
from kbert.export import export

sys.path.insert(0, str(pathlib.Path(__file__).parent))  # importlib mode: the helper beside us
import export_cases as cases  # noqa: E402

QUESTION, CONTEXT = "who ran on the mat ?", "the dog ran on the mat , the cat sat ."
SENTENCES = ["a dog ran", "The cats sat on the mat!"]  # 3 and 7 words: the first row is padded


@pytest.fixture(scope="module")
def exports(tmp_path_factory) -> dict[str, pathlib.Path]:
    root = tmp_path_factory.mktemp("predict_config")
    sources = cases.sources()
    return {task: export(sources[task], root / task / "1", tflite=True) for task in ("qa", "tag")}


def predict(capsys, *argv: str) -> list[dict]:
    capsys.readouterr()
    assert main(["predict", *map(str, argv)]) == 0
    return [json.loads(line) for line in capsys.readouterr().out.splitlines()]


def old_config(export_dir: pathlib.Path) -> None:
    """Rewrites the config as exports wrote it before it named each signature's inputs."""
    path = export_dir / "assets" / "kbert_export.json"
    config = json.loads(path.read_text())
    config["signatures"] = sorted(config["signatures"])
    path.write_text(json.dumps(config))


def test_qa_inputs_are_ordered_by_the_config(exports, capsys):
    path = exports["qa"]
    want = tf.saved_model.load(str(path)).signatures["serving_default"](
        question=tf.constant([QUESTION]), context=tf.constant([CONTEXT]))
    swapped = tf.saved_model.load(str(path)).signatures["serving_default"](
        question=tf.constant([CONTEXT]), context=tf.constant([QUESTION]))
    assert int(want["start_char"][0]) != int(swapped["start_char"][0])  # the order is visible in the answer
    (saved,) = predict(capsys, path, QUESTION, CONTEXT)
    assert (saved["start_char"], saved["end_char"]) == (int(want["start_char"][0]), int(want["end_char"][0]))
    assert saved["answer"] == want["answer"][0].numpy().decode() == CONTEXT[saved["start_char"]:saved["end_char"]]
    # The .tflite file reads the config of the export it sits in.
    (lite,) = predict(capsys, path / "model.tflite", QUESTION, CONTEXT)
    assert (lite["start_char"], lite["end_char"]) == (saved["start_char"], saved["end_char"])


def test_tag_lists_are_trimmed_to_their_counts(exports, capsys, tmp_path):
    path = exports["tag"]
    saved = predict(capsys, path, *SENTENCES)
    assert saved[0]["word_text"] == ["a", "dog", "ran"]  # the SavedModel's (TFLite has no string slicing)
    for target in (path, path / "model.tflite"):
        short, long = predict(capsys, target, *SENTENCES)
        assert (short["num_words"], long["num_words"]) == (3, 7)
        for row in (short, long):
            for key in ("word_start", "word_end", "word_label_id", "word_label"):
                assert len(row[key]) == row["num_words"], key
            for key in ("entity_type", "entity_start", "entity_end"):
                assert len(row[key]) == row["num_entities"], key
        assert [SENTENCES[1][s:e] for s, e in zip(long["word_start"], long["word_end"])] == \
            ["The", "cats", "sat", "on", "the", "mat", "!"]
    # The config, not a naming rule, says what is trimmed.
    edited = tmp_path / "edited"
    shutil.copytree(path, edited)
    config_path = edited / "assets" / "kbert_export.json"
    config = json.loads(config_path.read_text())
    config["signatures"]["serving_default"]["trim"] = {"num_words": ["word_label"]}
    config_path.write_text(json.dumps(config))
    short, _ = predict(capsys, edited, *SENTENCES, "--workers", "1")  # one batch: padded to the longest row
    assert len(short["word_label"]) == 3 and len(short["word_start"]) == 7
    assert short["word_start"][3:] == [-1] * 4


def test_an_export_without_input_order_needs_named_inputs(exports, capsys, tmp_path):
    old = tmp_path / "old"
    shutil.copytree(exports["qa"], old)
    old_config(old)
    lone = tmp_path / "lone" / "qa.tflite"  # a .tflite file outside its export: no config at all
    lone.parent.mkdir()
    shutil.copy(exports["qa"] / "model.tflite", lone)
    jsonl = tmp_path / "in.jsonl"
    jsonl.write_text(json.dumps({"context": CONTEXT, "question": QUESTION}) + "\n")
    (want,) = predict(capsys, exports["qa"], QUESTION, CONTEXT)
    for target in (old, lone):
        capsys.readouterr()
        assert main(["predict", str(target), QUESTION, CONTEXT]) == 2
        err = capsys.readouterr().err
        assert "'serving_default' takes context, question" in err and "--input" in err
        (row,) = predict(capsys, target, "--input", jsonl)
        assert (row["start_char"], row["end_char"]) == (want["start_char"], want["end_char"])


def test_an_older_export_still_predicts_and_trims(exports, capsys, tmp_path):
    old = tmp_path / "old"
    shutil.copytree(exports["tag"], old)
    old_config(old)
    (config,) = [json.loads((old / "assets" / "kbert_export.json").read_text())]
    assert isinstance(config["signatures"], list)
    new_rows = predict(capsys, exports["tag"], *SENTENCES)
    assert predict(capsys, old, *SENTENCES) == new_rows
    np.testing.assert_array_equal([len(r["word_label"]) for r in new_rows], [3, 7])
