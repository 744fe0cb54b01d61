"""CoNLL reader (columns, sentence breaks, -DOCSTART-, errors) and IOB1 -> IOB2 conversion."""

import pytest

from kbert.tasks.readers import detect_tagging_scheme, iob1_to_iob2, read_conll
from kbert.tasks.tagging import read_tagging
from kbert.metrics import entity_scores

CONLL = """-DOCSTART- -X- -X- O

EU NNP B-NP I-ORG
rejects VBZ B-VP O
German JJ B-NP I-MISC
call NN I-NP O

Peter NNP B-NP I-PER
Blackburn NNP I-NP I-PER
-DOCSTART- -X- -X- O

Paris NNP B-NP I-LOC
Lyon NNP I-NP B-LOC
"""


@pytest.fixture
def conll_file(tmp_path):
    path = tmp_path / "train.txt"
    path.write_text(CONLL, encoding="utf-8")
    return path


def test_read_ner_and_pos_columns(conll_file):
    ner = read_conll(conll_file)
    assert [e["words"] for e in ner] == [["EU", "rejects", "German", "call"], ["Peter", "Blackburn"], ["Paris", "Lyon"]]
    assert ner[0]["tags"] == ["I-ORG", "O", "I-MISC", "O"]
    assert ner[2]["tags"] == ["I-LOC", "B-LOC"]
    assert read_conll(conll_file, tag_column="pos")[1]["tags"] == ["NNP", "NNP"]
    assert read_conll(conll_file, tag_column=2)[0]["tags"] == ["B-NP", "B-VP", "B-NP", "I-NP"]
    assert read_tagging(conll_file, tag_column="chunk") == read_conll(conll_file, tag_column=2)


def test_iob1_to_iob2_and_scheme_detection(conll_file):
    sentences = read_tagging(conll_file)
    assert detect_tagging_scheme(e["tags"] for e in sentences) == "IOB1"
    converted = read_tagging(conll_file, to_iob2=True)
    assert converted[0]["tags"] == ["B-ORG", "O", "B-MISC", "O"]
    assert converted[1]["tags"] == ["B-PER", "I-PER"]
    assert converted[2]["tags"] == ["B-LOC", "B-LOC"]
    assert detect_tagging_scheme(e["tags"] for e in converted) == "IOB2"
    # Idempotent on IOB2, and the entities are unchanged by the conversion.
    assert [iob1_to_iob2(e["tags"]) for e in converted] == [e["tags"] for e in converted]
    scores = entity_scores([e["tags"] for e in sentences], [e["tags"] for e in converted])
    assert (scores["f1"], scores["num_gold"]) == (1.0, 5)
    assert iob1_to_iob2(["I-PER", "I-LOC", "I-LOC"]) == ["B-PER", "B-LOC", "I-LOC"]


def test_scheme_detection_edge_cases():
    assert detect_tagging_scheme([["O", "O"]]) == "IOB2"
    assert detect_tagging_scheme([["S-PER", "O"]]) == "IOBES"
    assert detect_tagging_scheme([["I-PER", "O"], ["B-LOC", "O"]]) == "mixed"
    with pytest.raises(ValueError, match="NNP"):
        detect_tagging_scheme([["NNP"]])
    with pytest.raises(ValueError, match="IOBES"):
        iob1_to_iob2(["S-PER"])


@pytest.mark.parametrize(
    "text, kwargs, message",
    [
        ("EU NNP B-NP B-ORG\nrejects\n", {"tag_column": "pos"}, r"bad\.txt:2: 1 column\(s\), need at least 2"),
        ("EU NNP B-NP B-ORG\nrejects VBZ O\n", {}, r"bad\.txt:2: 3 columns but earlier lines have 4"),
        ("EU B-ORG\n", {"tag_column": 3}, r"bad\.txt:1: 2 column\(s\), need at least 4"),
    ],
)
def test_malformed_lines_name_file_and_line(tmp_path, text, kwargs, message):
    path = tmp_path / "bad.txt"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ValueError, match=message):
        read_conll(path, **kwargs)


def test_bad_tag_column_name(conll_file):
    with pytest.raises(ValueError, match="tag_column"):
        read_conll(conll_file, tag_column="lemma")


def test_real_conll2003_test(shared_data):
    sentences = read_tagging(shared_data / "conll2003" / "test.txt")
    assert len(sentences) == 3453
    assert detect_tagging_scheme(s["tags"] for s in sentences) == "IOB2"
    assert all(len(s["words"]) == len(s["tags"]) for s in sentences)
