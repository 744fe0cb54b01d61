"""`Task.read_examples(source, limit, split)`: each task picks what a split reads from its own settings."""

import json

import pytest

from kbert.tasks import ClassificationTask, QuestionAnsweringTask, task_from_info
from kbert.tasks.settings import TaskSettings


def squad_file(path, articles):
    """A SQuAD v1.1 file with one article per list of question ids; each answer is "cat" at 4."""
    data = {"version": "1.1", "data": [
        {"title": f"t{i}", "paragraphs": [{"context": "the cat sat", "qas": [
            {"id": qid, "question": "who?", "answers": [{"text": "cat", "answer_start": 4}]} for qid in ids]}]}
        for i, ids in enumerate(articles)]}
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def ids(examples):
    return [e["id"] for e in examples]


def test_question_answering_reads_the_articles_of_each_split(tmp_path):
    path = squad_file(tmp_path / "squad.json", [["a1", "a2"], ["b1"], ["c1", "c2"]])
    task = QuestionAnsweringTask(train_articles=(0, 2), validation_articles=(2, 3))
    assert ids(task.read_examples(path)) == ["a1", "a2", "b1"]  # split="train" by default
    assert ids(task.read_examples(path, split="validation")) == ["c1", "c2"]
    assert ids(task.read_examples(path, limit=1, split="validation")) == ["c1"]
    assert ids(QuestionAnsweringTask().read_examples(path, split="validation")) == ["a1", "a2", "b1", "c1", "c2"]
    with pytest.raises(ValueError, match="outside the 3 articles"):
        QuestionAnsweringTask(validation_articles=(2, 5)).read_examples(path, split="validation")


def test_article_ranges_are_settings_saved_in_task_json():
    task = QuestionAnsweringTask(doc_stride=32, validation_articles=(40, 48))
    info = json.loads(json.dumps(task.info()))  # through JSON, as task.json keeps it
    assert info["train_articles"] is None and info["validation_articles"] == [40, 48]
    restored = task_from_info(info)
    assert restored.validation_articles == [40, 48] and restored.doc_stride == 32


def test_a_split_that_is_neither_train_nor_validation_is_an_error(tmp_path):
    path = tmp_path / "train.tsv"
    path.write_text("text\tlabel\nthe cat\t1\na dog\t0\n", encoding="utf-8")
    task = ClassificationTask()
    assert task.read_examples(path, split="validation") == task.read_examples(path, split="train")
    with pytest.raises(ValueError, match="split must be one of \\('train', 'validation'\\), got 'test'"):
        task.read_examples(path, split="test")


def test_the_shared_settings_know_nothing_of_articles():
    assert not any("article" in name for name in vars(TaskSettings))
    assert [f for f in ("train_articles", "validation_articles") if f in ClassificationTask.__dataclass_fields__] == []
