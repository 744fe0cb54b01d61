"""`Task.evaluate`'s progress bar counts the batches it will run: its total is known from the start."""

import math

import keras
import pytest

import kbert
from tests.conftest import TINY_VOCAB


class RecordedProgbar(keras.utils.Progbar):
    """A `Progbar` that remembers its total and each step it was told of."""

    made: list["RecordedProgbar"] = []

    def __init__(self, target, *args, **kwargs):
        super().__init__(target, *args, **kwargs)
        self.steps: list[int] = []
        RecordedProgbar.made.append(self)

    def update(self, current, *args, **kwargs):
        self.steps.append(current)
        super().update(current, *args, **kwargs)


@pytest.fixture
def progbars(monkeypatch):
    RecordedProgbar.made = []
    monkeypatch.setattr(keras.utils, "Progbar", RecordedProgbar)
    return RecordedProgbar.made


def tiny_encoder() -> kbert.BertEncoder:
    return kbert.BertEncoder(vocab_size=len(TINY_VOCAB), hidden_size=16, num_hidden_layers=1,
                             num_attention_heads=2, intermediate_size=32, max_position_embeddings=32)


def test_the_bar_shows_the_number_of_batches(capsys):
    task = kbert.ClassificationTask(labels=["bad", "good"])
    examples = [{"text": text, "text_pair": None, "label": label}
                for text, label in [("a good cat", "good"), ("the bad dog", "bad"), ("good", "good"),
                                    ("a cat sat", "bad"), ("the dog ran on the mat", "good")]]
    preprocessor = kbert.BertPreprocessor(kbert.BertTokenizer(TINY_VOCAB), sequence_length=16)
    metrics = task.evaluate(task.build_model(tiny_encoder()), examples, preprocessor, batch_size=2)
    assert metrics["num_examples"] == 5
    printed = capsys.readouterr().out
    assert "3/3" in printed and "Unknown" not in printed  # 5 examples, 2 a batch: 3 batches
    assert printed.endswith("\n") and not printed.endswith("\n\n")  # the finished bar ends its own line


def test_qa_counts_windows_not_questions(progbars):
    """A long context is several windows: the bar counts the model's rows, as `TaskData.size` does."""
    task = kbert.QuestionAnsweringTask(doc_stride=5, max_query_length=2)
    long = " ".join(["the cat sat on the mat ."] * 6) + " a dog ran ."
    examples = [{"id": "q1", "question": "the dog ?", "context": long,
                 "answers": [{"text": "a dog ran", "answer_start": long.index("a dog ran")}]},
                {"id": "q2", "question": "the cat ?", "context": "a cat sat .",
                 "answers": [{"text": "cat", "answer_start": 2}]}]
    preprocessor = kbert.BertPreprocessor(kbert.BertTokenizer(TINY_VOCAB), sequence_length=16)
    windows = task.dataset(examples, preprocessor, 4, training=False).size
    assert windows > 4  # more than one batch, where the two questions would fit in one

    task.evaluate(task.build_model(tiny_encoder()), examples, preprocessor, batch_size=4, verbose=0)
    (bar,) = progbars
    assert bar.target == math.ceil(windows / 4)
    assert bar.steps == list(range(1, bar.target + 1))  # every batch run was counted, and no more
