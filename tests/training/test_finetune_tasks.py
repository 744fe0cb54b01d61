"""Each task object learns a synthetic problem through `kbert.training.finetune.finetune`, and reloads."""

import json
import random

import pytest

import kbert
from kbert.tasks import ClassificationTask, QuestionAnsweringTask, TaggingTask
from kbert.training.finetune import FinetuneConfig, evaluate_model, finetune
from tests.training.conftest import FILLER, write_tsv

FAST = dict(epochs=8, batch_size=16, learning_rate=2e-3, warmup_ratio=0.1, verbose=0)


def config(init, train, validation, out, **settings) -> FinetuneConfig:
    return FinetuneConfig(train=str(train), validation=str(validation), out=str(out), init=str(init),
                          **{**FAST, **settings})


def test_sentence_pair_classification(tmp_path, tiny_init):
    # Label: does the second text contain "good"? Only the pair segment decides.
    rng = random.Random(0)

    def rows(n):
        out = []
        for _ in range(n):
            label = rng.randint(0, 1)
            pair = rng.choices(FILLER, k=3) + ["good" if label else "bad"]
            first = rng.choices(FILLER, k=3) + [rng.choice(["good", "bad"])]
            out.append((" ".join(first), " ".join(rng.sample(pair, len(pair))), "yes" if label else "no"))
        return out

    train = write_tsv(tmp_path / "train.tsv", ["a", "b", "y"], rows(320))
    dev = write_tsv(tmp_path / "dev.tsv", ["a", "b", "y"], rows(64))
    result = finetune(ClassificationTask(text_column="a", text_pair_column="b", label_column="y"),
                      config(tiny_init, train, dev, tmp_path / "out", sequence_length=16))
    assert result["metrics"]["accuracy"] >= 0.9
    model = kbert.load_model(tmp_path / "out")
    assert model.task.labels == ["no", "yes"] and model.task.text_pair_column == "b"


def test_regression_is_auto_detected_and_learns(tmp_path, tiny_init):
    rng = random.Random(1)

    def rows(n):
        out = []
        for _ in range(n):
            count = rng.randint(0, 3)
            words = rng.choices(FILLER, k=4) + ["good"] * count
            out.append((" ".join(rng.sample(words, len(words))), f"{count * 0.5:.1f}"))
        return out

    train = write_tsv(tmp_path / "train.tsv", ["text", "score"], rows(320))
    dev = write_tsv(tmp_path / "dev.tsv", ["text", "score"], rows(64))
    result = finetune(ClassificationTask(label_column="score"),
                      config(tiny_init, train, dev, tmp_path / "out", sequence_length=16))
    assert result["metrics"]["pearson"] >= 0.9 and result["metrics"]["spearman"] >= 0.85
    model = kbert.load_model(tmp_path / "out")
    assert model.task == kbert.RegressionTask(label_column="score") and model.output.shape == (None, 1)


def _conll(path, sentences):
    lines = []
    for words, tags in sentences:
        lines += [f"{w} X {t}" for w, t in zip(words, tags)] + [""]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_tagging_learns_token_classes(tmp_path, tiny_init):
    # "cat"/"cats"/"dog" are animals (B-ANI; "cats" is cat ##s: the tag sits on its first piece), "mat" an
    # object, the rest O.
    rng = random.Random(2)
    vocab = {"cat": "B-ANI", "cats": "B-ANI", "dog": "B-ANI", "mat": "B-OBJ", "the": "O", "sat": "O",
             "on": "O", "ran": "O", "a": "O", "good": "O", ".": "O"}

    def sentences(n):
        out = []
        for _ in range(n):
            words = rng.choices(list(vocab), k=rng.randint(3, 9))
            out.append((words, [vocab[w] for w in words]))
        return out

    train = _conll(tmp_path / "train.txt", sentences(256))
    dev = _conll(tmp_path / "dev.txt", sentences(64))
    result = finetune(TaggingTask(), config(tiny_init, train, dev, tmp_path / "out", sequence_length=16))
    metrics = result["metrics"]
    assert metrics["f1"] >= 0.95 and metrics["accuracy"] >= 0.97
    assert set(metrics["per_type"]) == {"ANI", "OBJ"}
    assert evaluate_model(tmp_path / "out", dev, verbose=0)["f1"] == pytest.approx(metrics["f1"])
    assert kbert.load_model(tmp_path / "out").task.labels == ["B-ANI", "B-OBJ", "O"]


def _squad(path, *articles):
    """A SQuAD v1.1 file: one article per list of examples."""
    data = {"version": "1.1", "data": [{"title": f"t{i}", "paragraphs": [
        {"context": e["context"], "qas": [{"id": e["id"], "question": e["question"],
                                             "answers": e["answers"]}]} for e in examples]}
        for i, examples in enumerate(articles)]}
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def qa_examples(n, seed, min_words=4, max_words=10):
    """The answer is the two words after the marker "!"."""
    rng = random.Random(seed)
    out = []
    for i in range(n):
        before = rng.choices(FILLER, k=rng.randint(min_words, max_words))
        after = rng.choices(FILLER, k=rng.randint(min_words, max_words))
        answer = " ".join(rng.choices(["good cat", "bad dog", "a mat", "the dog"], k=1))
        prefix = " ".join(before) + " ! "
        context = prefix + answer + " " + " ".join(after)
        out.append({"id": f"q{seed}-{i}", "question": "?", "context": context,
                    "answers": [{"text": answer, "answer_start": len(prefix)}]})
    return out


def test_question_answering_learns_span_after_marker(tmp_path, tiny_init):
    # The training file's second article has answers off their text: strict reading would stop at them,
    # so training reads only the first article (train_articles). Validation reads the dev file's first.
    broken = [{**e, "answers": [{**e["answers"][0], "answer_start": -1}]} for e in qa_examples(4, 2)]
    train = _squad(tmp_path / "train.json", qa_examples(640, 0), broken)
    dev = _squad(tmp_path / "dev.json", qa_examples(48, 1), qa_examples(16, 3))
    task = QuestionAnsweringTask(doc_stride=8, max_query_length=4, strict_answers=True, train_articles=(0, 1),
                                 validation_articles=(0, 1))
    result = finetune(task, config(tiny_init, train, dev, tmp_path / "out", sequence_length=32, epochs=16,
                                   learning_rate=3e-3))
    metrics = result["metrics"]
    assert metrics["exact_match"] >= 85.0 and metrics["total"] == 48
    model = kbert.load_model(tmp_path / "out")
    assert model.task.name == "qa" and model.task.doc_stride == 8
    assert model.task.validation_articles == [0, 1]

    # evaluate_model reads the saved validation articles, unless settings given to it replace them.
    assert evaluate_model(tmp_path / "out", dev, verbose=0) == pytest.approx(metrics)
    assert evaluate_model(tmp_path / "out", dev, verbose=0, validation_articles=(1, 2))["total"] == 16
    assert evaluate_model(tmp_path / "out", dev, verbose=0, validation_articles=None)["total"] == 64
    with pytest.raises(ValueError, match="'article_range': not a setting of the qa task"):
        evaluate_model(tmp_path / "out", dev, verbose=0, article_range=(0, 1))
