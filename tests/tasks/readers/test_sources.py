"""Source strings and label vocabularies."""

import pytest

from kbert.tasks.readers import DataSource, build_label_vocabulary, parse_source


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
