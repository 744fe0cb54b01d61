"""tfds readers for every supported dataset, through `tfds.testing.mock_data` (no download).

Mock data keeps each builder's real feature spec (names, ClassLabel names) but fills it with random
values: sequence features get independent random lengths, and SQuAD answer offsets are random. The
readers' `on_length_mismatch` / `validate_answers` options handle that; the tests check both ways.
"""

import warnings

import pytest

tfds = pytest.importorskip("tensorflow_datasets")
tf = pytest.importorskip("tensorflow")

from kbert.tasks.classification import read_classification  # noqa: E402
from kbert.tasks.question_answering import read_squad  # noqa: E402
from kbert.tasks.readers import source_label_names  # noqa: E402
from kbert.tasks.tagging import read_tagging  # noqa: E402

NUM_EXAMPLES = 3

# Hand-written from the tfds GLUE / IMDB catalog pages: (name, split, text feature, pair feature, labels).
CLASSIFICATION = [
    ("glue/cola", "train", "sentence", None, ["unacceptable", "acceptable"]),
    ("glue/sst2", "validation", "sentence", None, ["negative", "positive"]),
    ("glue/mrpc", "train", "sentence1", "sentence2", ["not_equivalent", "equivalent"]),
    ("glue/qqp", "validation", "question1", "question2", ["not_duplicate", "duplicate"]),
    ("glue/stsb", "train", "sentence1", "sentence2", None),
    ("glue/mnli", "validation_matched", "premise", "hypothesis", ["entailment", "neutral", "contradiction"]),
    ("glue/mnli", "validation_mismatched", "premise", "hypothesis", ["entailment", "neutral", "contradiction"]),
    ("glue/mnli_mismatched", "validation", "premise", "hypothesis", ["entailment", "neutral", "contradiction"]),
    ("glue/qnli", "train", "question", "sentence", ["entailment", "not_entailment"]),
    ("glue/rte", "train", "sentence1", "sentence2", ["entailment", "not_entailment"]),
    ("glue/wnli", "train", "sentence1", "sentence2", ["not_entailment", "entailment"]),
    ("glue/ax", "test", "premise", "hypothesis", ["entailment", "neutral", "contradiction"]),
    ("imdb_reviews", "test", "text", None, ["neg", "pos"]),
    ("imdb_reviews/plain_text", "train", "text", None, ["neg", "pos"]),
]


def raw_rows(name, split):
    return list(tfds.as_numpy(tfds.load(name, split=split)))


@pytest.mark.parametrize("name, split, text, pair, labels", CLASSIFICATION, ids=[f"{c[0]}:{c[1]}" for c in CLASSIFICATION])
def test_classification_datasets(name, split, text, pair, labels):
    with tfds.testing.mock_data(num_examples=NUM_EXAMPLES):
        examples = read_classification(f"tfds:{name}:{split}")
        raw = raw_rows(name, split)  # the mock is seeded: the same rows again
        assert source_label_names(f"tfds:{name}") == labels
    assert len(examples) == NUM_EXAMPLES
    for example, row in zip(examples, raw):
        assert example["text"] == row[text].decode("utf-8")
        assert example["text_pair"] == (row[pair].decode("utf-8") if pair else None)
        if labels is None:  # STS-B: a float similarity score
            assert isinstance(example["label"], float)
            assert example["label"] == pytest.approx(float(row["label"]))
        else:
            assert example["label"] == labels[int(row["label"])]


def test_split_argument_and_overrides():
    with tfds.testing.mock_data(num_examples=2):
        by_argument = read_classification("tfds:glue/rte", split="validation")
        assert by_argument == read_classification("tfds:glue/rte:validation")
        # An explicit column wins over the dataset default; None reads no labels.
        swapped = read_classification("tfds:glue/rte:validation", text_column="sentence2", label_column=None)
        assert [e["text"] for e in swapped] == [e["text_pair"] for e in by_argument]
        assert {e["label"] for e in swapped} == {None}
        with pytest.raises(ValueError, match="split"):
            read_classification("tfds:glue/rte:validation", split="train")
        with pytest.raises(ValueError, match="no feature 'sentence'"):
            read_classification("tfds:glue/mnli:validation_matched", text_column="sentence")
        with pytest.raises(ValueError, match="not in"):
            read_classification("tfds:glue/sst2", labels=["0", "1"])


def test_glue_test_split_label_minus_one_is_none():
    def as_dataset(self, *args, **kwargs):
        return tf.data.Dataset.from_tensor_slices(
            {"sentence": ["fine", "bad"], "label": tf.constant([-1, 1], tf.int64), "idx": tf.constant([0, 1], tf.int32)}
        )

    with tfds.testing.mock_data(as_dataset_fn=as_dataset):
        examples = read_classification("tfds:glue/sst2:test")
    assert examples == [
        {"text": "fine", "text_pair": None, "label": None},
        {"text": "bad", "text_pair": None, "label": "positive"},
    ]


NER_NAMES = ["O", "B-PER", "I-PER", "B-ORG", "I-ORG", "B-LOC", "I-LOC", "B-MISC", "I-MISC"]


@pytest.mark.parametrize("column, feature", [("ner", "ner"), ("pos", "pos"), ("chunk", "chunks"), (-1, "ner")])
def test_conll2003_mock_lengths_truncated(column, feature):
    with tfds.testing.mock_data(num_examples=NUM_EXAMPLES):
        with pytest.warns(UserWarning, match="truncated to the shorter"):
            examples = read_tagging("tfds:conll2003:train", tag_column=column)
        raw = raw_rows("conll2003", "train")
        names = source_label_names("tfds:conll2003", column=feature)
    if feature == "ner":
        assert names == NER_NAMES
    assert len(examples) == NUM_EXAMPLES
    for example, row in zip(examples, raw):
        keep = min(len(row["tokens"]), len(row[feature]))
        assert example["words"] == [w.decode("utf-8") for w in row["tokens"][:keep]]
        assert example["tags"] == [names[t] for t in row[feature][:keep]]


def test_conll2003_mismatch_policies():
    with tfds.testing.mock_data(num_examples=NUM_EXAMPLES):
        raw = raw_rows("conll2003", "validation")
        mismatched = sum(len(r["tokens"]) != len(r["ner"]) for r in raw)
        assert mismatched > 0  # the premise of this test: mock lengths are independent
        with pytest.warns(UserWarning, match=f"{mismatched} example"):
            skipped = read_tagging("tfds:conll2003:validation", on_length_mismatch="skip")
        assert len(skipped) == NUM_EXAMPLES - mismatched
        with pytest.raises(ValueError, match="different lengths"):
            read_tagging("tfds:conll2003:validation", on_length_mismatch="raise")


def test_conll2003_consistent_data_no_warning_and_iob2():
    def as_dataset(self, *args, **kwargs):
        return tf.data.Dataset.from_tensor_slices(
            {
                "tokens": tf.ragged.constant([["Zürich", "is", "big"]]),
                "ner": tf.ragged.constant([[6, 0, 0]], dtype=tf.int64),  # I-LOC: IOB1-style opening
                "pos": tf.ragged.constant([[0, 1, 2]], dtype=tf.int64),
                "chunks": tf.ragged.constant([[0, 1, 2]], dtype=tf.int64),
            }
        )

    with tfds.testing.mock_data(as_dataset_fn=as_dataset), warnings.catch_warnings():
        warnings.simplefilter("error")
        assert read_tagging("tfds:conll2003") == [{"words": ["Zürich", "is", "big"], "tags": ["I-LOC", "O", "O"]}]
        assert read_tagging("tfds:conll2003", to_iob2=True)[0]["tags"] == ["B-LOC", "O", "O"]


@pytest.mark.parametrize("name, split", [("squad/v1.1", "train"), ("squad/v2.0", "validation")])
def test_squad_mock(name, split):
    with tfds.testing.mock_data(num_examples=NUM_EXAMPLES):
        # Mock offsets are random, so strict validation must fail and name the question.
        first_id = raw_rows(name, split)[0]["id"].decode("utf-8")
        if name == "squad/v1.1":
            with pytest.raises(ValueError, match=f"question '{first_id}'"), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                read_squad(f"tfds:{name}:{split}", strict_answers=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            examples = read_squad(f"tfds:{name}:{split}", validate_answers=False)
        raw = raw_rows(name, split)
    assert len(examples) == NUM_EXAMPLES
    for example, row in zip(examples, raw):
        assert set(example) == {"id", "question", "context", "answers", "is_impossible"}
        assert example["id"] == row["id"].decode("utf-8")
        assert example["question"] == row["question"].decode("utf-8")
        assert example["context"] == row["context"].decode("utf-8")
        impossible = bool(row.get("is_impossible", False))
        assert example["is_impossible"] == impossible
        keep = 0 if impossible else min(len(row["answers"]["text"]), len(row["answers"]["answer_start"]))
        assert [a["text"] for a in example["answers"]] == [t.decode("utf-8") for t in row["answers"]["text"][:keep]]
        assert [a["answer_start"] for a in example["answers"]] == list(row["answers"]["answer_start"][:keep])


def test_squad_consistent_data_validates():
    def as_dataset(self, *args, **kwargs):
        return tf.data.Dataset.from_tensors(
            {
                "id": "q1",
                "title": "Zürich",
                "context": "Zürich liegt am See.",
                "question": "Wo?",
                "answers": {"text": ["am See"], "answer_start": tf.constant([13], tf.int32)},
            }
        )

    with tfds.testing.mock_data(as_dataset_fn=as_dataset):
        examples = read_squad("tfds:squad/v1.1:validation")
        with pytest.raises(ValueError, match="article_range"):
            read_squad("tfds:squad/v1.1", article_range=(0, 1))
    assert examples == [
        {"id": "q1", "question": "Wo?", "context": "Zürich liegt am See.",
         "answers": [{"text": "am See", "answer_start": 13}], "is_impossible": False}
    ]
