"""Entity extraction and entity-level P/R/F1 on hand-counted IOB1, IOB2 and IOBES taggings."""

import pytest

from kbert.metrics import entity_f1, entity_scores, extract_entities


def test_extract_iob2():
    tags = ["B-PER", "I-PER", "O", "B-LOC", "B-LOC", "I-LOC"]
    assert extract_entities(tags) == [("PER", 0, 2), ("LOC", 3, 4), ("LOC", 4, 6)]


def test_extract_iob1_gives_the_same_spans():
    # IOB1: I- opens an entity; B- only separates two adjacent entities of the same type.
    tags = ["I-PER", "I-PER", "O", "I-LOC", "B-LOC", "I-LOC"]
    assert extract_entities(tags) == [("PER", 0, 2), ("LOC", 3, 4), ("LOC", 4, 6)]


def test_extract_edge_cases():
    assert extract_entities(["B-LOC", "I-PER"]) == [("LOC", 0, 1), ("PER", 1, 2)]  # type change splits
    assert extract_entities(["O", "I-MISC"]) == [("MISC", 1, 2)]  # entity running to the end
    assert extract_entities(["S-PER", "B-LOC", "E-LOC", "O"]) == [("PER", 0, 1), ("LOC", 1, 3)]  # IOBES
    assert extract_entities(["O", "O"]) == []
    assert extract_entities(["B-ORG", "I-ORG", "I-ORG"]) == [("ORG", 0, 3)]
    with pytest.raises(ValueError, match="PER"):
        extract_entities(["PER"])
    with pytest.raises(ValueError, match="X-LOC"):
        extract_entities(["X-LOC"])


GOLD_IOB2 = [["B-PER", "I-PER", "O", "B-LOC"], ["B-ORG", "I-ORG", "I-ORG", "O", "B-MISC"]]
PRED_IOB2 = [["B-PER", "I-PER", "O", "B-ORG"], ["B-ORG", "I-ORG", "O", "O", "B-MISC"]]
GOLD_IOB1 = [["I-PER", "I-PER", "O", "I-LOC"], ["I-ORG", "I-ORG", "I-ORG", "O", "I-MISC"]]
PRED_IOB1 = [["I-PER", "I-PER", "O", "I-ORG"], ["I-ORG", "I-ORG", "O", "O", "I-MISC"]]


def test_scores_hand_counted():
    # gold: PER(0,2) LOC(3,4) | ORG(0,3) MISC(4,5); predicted: PER(0,2) ORG(3,4) | ORG(0,2) MISC(4,5)
    # correct: PER, MISC -> P = 2/4, R = 2/4, F1 = 0.5
    scores = entity_scores(GOLD_IOB2, PRED_IOB2)
    assert (scores["num_gold"], scores["num_predicted"], scores["num_correct"]) == (4, 4, 2)
    assert scores["precision"] == pytest.approx(0.5)
    assert scores["recall"] == pytest.approx(0.5)
    assert scores["f1"] == pytest.approx(0.5)
    per_type = scores["per_type"]
    assert per_type["PER"] == {"precision": 1.0, "recall": 1.0, "f1": 1.0, "support": 1}
    assert per_type["LOC"] == {"precision": 0.0, "recall": 0.0, "f1": 0.0, "support": 1}
    assert per_type["ORG"] == {"precision": 0.0, "recall": 0.0, "f1": 0.0, "support": 1}
    assert per_type["MISC"]["f1"] == 1.0


def test_unequal_precision_and_recall():
    # gold 3 entities, predicted 2, both correct: P = 1, R = 2/3, F1 = 0.8
    gold = [["B-PER", "O", "B-LOC", "O", "B-ORG"]]
    pred = [["B-PER", "O", "B-LOC", "O", "O"]]
    scores = entity_scores(gold, pred)
    assert (scores["precision"], scores["recall"]) == (pytest.approx(1.0), pytest.approx(2 / 3))
    assert entity_f1(gold, pred) == pytest.approx(0.8)


@pytest.mark.parametrize(
    "gold, pred",
    [(GOLD_IOB1, PRED_IOB1), (GOLD_IOB1, PRED_IOB2), (GOLD_IOB2, PRED_IOB1)],
    ids=["iob1-iob1", "iob1-iob2", "iob2-iob1"],
)
def test_iob1_and_iob2_score_identically(gold, pred):
    assert entity_scores(gold, pred) == entity_scores(GOLD_IOB2, PRED_IOB2)


def test_adjacent_same_type_entities_iob1_vs_iob2():
    iob1 = [["I-LOC", "B-LOC", "O"]]
    iob2 = [["B-LOC", "B-LOC", "O"]]
    merged = [["B-LOC", "I-LOC", "O"]]  # one two-word entity instead of two one-word ones
    assert entity_f1(iob1, iob2) == 1.0
    assert entity_f1(iob2, merged) == 0.0


def test_length_mismatch_is_an_error():
    with pytest.raises(ValueError, match="sentence 0"):
        entity_scores([["O", "O"]], [["O"]])
    with pytest.raises(ValueError, match="2 gold sentences"):
        entity_scores([["O"], ["O"]], [["O"]])
