"""SQuAD JSON reader: v1.1 and v2.0 layouts, answer validation, article ranges."""

import json

import pytest

from kbert.tasks.question_answering import read_squad
from kbert.tasks.readers import AnswerOffsetWarning, squad_examples


def squad(*articles, version="1.1"):
    return {"version": version, "data": list(articles)}


def article(title, context, *qas):
    return {"title": title, "paragraphs": [{"context": context, "qas": list(qas)}]}


def qa(qid, question, *answers, impossible=None):
    item = {"id": qid, "question": question, "answers": [{"text": t, "answer_start": s} for t, s in answers]}
    if impossible is not None:
        item["is_impossible"] = impossible
    return item


DOC = squad(
    article("Denver", "The Denver Broncos won Super Bowl 50.", qa("q1", "Who won?", ("Denver Broncos", 4), ("Broncos", 11))),
    article("Paris", "Paris is the capital of France.", qa("q2", "Capital?", ("Paris", 0))),
    article("Rome", "Rome is old.", qa("q3", "Age?", ("old", 8))),
)


def test_read_v11_file(tmp_path):
    path = tmp_path / "dev.json"
    path.write_text(json.dumps(DOC), encoding="utf-8")
    examples = read_squad(path)
    assert [e["id"] for e in examples] == ["q1", "q2", "q3"]
    assert examples[0] == {
        "id": "q1",
        "question": "Who won?",
        "context": "The Denver Broncos won Super Bowl 50.",
        "answers": [{"text": "Denver Broncos", "answer_start": 4}, {"text": "Broncos", "answer_start": 11}],
        "is_impossible": False,
    }
    assert [e["id"] for e in read_squad(path, article_range=(1, 3))] == ["q2", "q3"]
    assert [e["id"] for e in read_squad(path, article_range=range(0, 1))] == ["q1"]
    with pytest.raises(ValueError, match="article_range"):
        read_squad(path, article_range=(2, 5))


def test_v20_impossible_questions():
    doc = squad(
        article("Paris", "Paris is the capital of France.", qa("a", "Capital?", ("Paris", 0), impossible=False),
                {"id": "b", "question": "Capital of Mars?", "answers": [], "is_impossible": True,
                 "plausible_answers": [{"text": "Paris", "answer_start": 0}]}),
        version="v2.0",
    )
    examples = squad_examples(doc)
    assert [(e["id"], e["is_impossible"], len(e["answers"])) for e in examples] == [("a", False, 1), ("b", True, 0)]


def test_wrong_answer_start_names_the_question(tmp_path):
    doc = squad(article("Rome", "Rome is old.", qa("q-bad", "Age?", ("old", 7))))
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    with pytest.raises(ValueError, match=r"bad\.json: question 'q-bad': answer 'old' is not at answer_start 7"):
        read_squad(path, strict_answers=True)
    assert read_squad(path, validate_answers=False)[0]["answers"] == [{"text": "old", "answer_start": 7}]
    with pytest.raises(ValueError, match="runs outside the context"):
        squad_examples(squad(article("Rome", "Rome is old.", qa("q", "Age?", ("old", 50)))), strict_answers=True)
    # By default the answer is skipped with a warning, and its question, left without answers, too.
    with pytest.warns(AnswerOffsetWarning, match=r"bad\.json: skipped 1 of 1 answers .* \('q-bad'\)"):
        assert read_squad(path) == []


def test_structural_errors(tmp_path):
    with pytest.raises(ValueError, match="no top-level 'data'"):
        squad_examples({"version": "1.1"})
    with pytest.raises(ValueError, match="question 'q' has no answers"):
        squad_examples(squad(article("t", "ctx", qa("q", "?"))))
    path = tmp_path / "broken.json"
    path.write_text('{"data": [\n', encoding="utf-8")
    with pytest.raises(ValueError, match=r"broken\.json:\d+: invalid JSON"):
        read_squad(path)


def test_real_squad_dev_split(shared_data):
    path = shared_data / "squad_v1.1" / "dev-v1.1.json"
    train = read_squad(path, article_range=(0, 40))
    evaluation = read_squad(path, article_range=(40, 48))
    assert len(train) + len(evaluation) == 10570
    assert not {e["id"] for e in train} & {e["id"] for e in evaluation}
