"""`kbert distill embed --teacher DIR` where DIR is a sentence-transformers model as published: the student comes
closer to the vectors sentence-transformers itself computes for the teacher, and is an ordinary embed model."""

import json
import random

import numpy as np
import pytest

import kbert
from kbert.cli.main import main
from kbert.training.student import build_student
from tests.sentence_models import VOCAB, sentence_model_dir

WORDS = [word for word in VOCAB if word.isalpha()]


def texts(count: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(rng.choices(WORDS, k=rng.randint(2, 10))) for _ in range(count)]


def mean_squared(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.mean(np.sum((np.asarray(a, np.float64) - np.asarray(b, np.float64)) ** 2, axis=-1)))


@pytest.mark.slow  # a whole `kbert distill` of four epochs: about 25 s
def test_a_sentence_transformers_teacher_distils(tmp_path):
    st = pytest.importorskip("sentence_transformers")
    teacher_dir = sentence_model_dir(tmp_path / "gte", "gte")
    # No dropout: the student keeps its teacher's, whose noise at this width (about 0.015 a unit) would drown the
    # teacher-student gap the test measures (about 1e-4 a unit).
    config = json.loads((teacher_dir / "config.json").read_text())
    config.update(hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    (teacher_dir / "config.json").write_text(json.dumps(config))
    held_out = texts(24, 1)
    reference = st.SentenceTransformer(str(teacher_dir), device="cpu").encode(held_out)
    teacher = kbert.load_sentence_encoder(teacher_dir)
    start, _ = build_student(teacher, teacher.task, layers=1)
    start.task, start.tokenizer, start.preprocessor = teacher.task, teacher.tokenizer, teacher.preprocessor
    before = mean_squared(start.encode(held_out), reference)
    (tmp_path / "texts.txt").write_text("\n".join(texts(64, 0)) + "\n", encoding="utf-8")
    out = tmp_path / "student"
    assert main(["distill", "embed", "--teacher", str(teacher_dir), "--unlabelled", str(tmp_path / "texts.txt"),
                 "--student-layers", "1", "--sequence-length", "16", "--epochs", "4", "--batch-size", "8",
                 "--learning-rate", "1e-3", "--mixed-precision", "none", "--verbose", "0", "--out", str(out)]) == 0
    student = kbert.load_model(out)
    after = mean_squared(student.encode(held_out), reference)
    assert after < 0.5 * before, (before, after)
    assert student.task.name == "embed" and student.task.pooling == "mean"
    assert student.encoder.bert_config.num_hidden_layers == 1
    record = json.loads((out / "distillation.json").read_text())
    assert record["teacher"] == str(teacher_dir) and record["student"] == {"layers": [0]}


def test_another_task_still_needs_a_model_directory(tmp_path, capsys):
    teacher_dir = sentence_model_dir(tmp_path / "gte", "gte")
    (tmp_path / "texts.txt").write_text("a cat\n", encoding="utf-8")
    assert main(["distill", "classify", "--teacher", str(teacher_dir), "--unlabelled", str(tmp_path / "texts.txt"),
                 "--out", str(tmp_path / "out")]) == 1
    assert "not a kbert model directory" in capsys.readouterr().err
