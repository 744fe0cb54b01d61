"""Source strings and label vocabularies."""

import json

import pytest

from kbert.data import DataSource, build_label_vocabulary, load_labels, parse_source, save_labels


@pytest.mark.parametrize(
    "source, expected",
    [
        ("tfds:glue/sst2", DataSource("tfds", "glue/sst2", None)),
        ("tfds:glue/mnli:validation_matched", DataSource("tfds", "glue/mnli", "validation_matched")),
        ("tfds:glue/sst2:2.0.0:train[:10%]", DataSource("tfds", "glue/sst2:2.0.0", "train[:10%]")),
        ("tfds:squad/v1.1:train[:100]", DataSource("tfds", "squad/v1.1", "train[:100]")),
        ("data/train.tsv", DataSource("file", "data/train.tsv", None)),
    ],
)
def test_parse_source(source, expected):
    assert parse_source(source) == expected


def test_parse_source_errors():
    with pytest.raises(ValueError, match="tfds:NAME"):
        parse_source("tfds:")


def test_label_vocabulary_sorting():
    assert build_label_vocabulary(["1", "0", "10", "2", "1", None]) == ["0", "1", "2", "10"]
    assert build_label_vocabulary(["neutral", "entailment", "contradiction", "entailment"]) == [
        "contradiction", "entailment", "neutral"]
    assert build_label_vocabulary(["O", "B-PER", "I-PER"]) == ["B-PER", "I-PER", "O"]
    assert build_label_vocabulary(["-1", "0.5", "1"]) == ["-1", "0.5", "1"]
    with pytest.raises(ValueError, match="no labels"):
        build_label_vocabulary([None])


def test_save_and_load_labels(tmp_path):
    written = save_labels(["neg", "pos"], tmp_path / "model")
    assert written == str(tmp_path / "model" / "labels.json")
    assert json.loads((tmp_path / "model" / "labels.json").read_text()) == {"labels": ["neg", "pos"]}
    assert load_labels(tmp_path / "model") == ["neg", "pos"]
    assert load_labels(save_labels(["a"], tmp_path / "custom.json")) == ["a"]
    with pytest.raises(ValueError, match="duplicate"):
        save_labels(["a", "a"], tmp_path)
    (tmp_path / "bad.json").write_text('{"labels": [1, 2]}')
    with pytest.raises(ValueError, match="bad.json"):
        load_labels(tmp_path / "bad.json")
