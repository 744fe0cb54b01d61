"""The PyTorch reference of kbert's distillation (benchmarks/studies/distill_reference.py): its loss against a
hand computation, its interleaving of labelled and unlabelled batches against kbert's `mixed_batches`, its
length-grouped batches, and a whole run of its training on a tiny random BERT and a few rows."""

import json
import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from benchmarks.studies.distill_reference import (distillation_loss, grouped_batches, mixed_order,  # noqa: E402
                                                  parse_args, soft_target_kl, train, welch_interval)


def _softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def test_the_loss_is_kl_times_t_squared_mixed_with_cross_entropy_on_labelled_batches():
    rng = np.random.default_rng(0)
    teacher, student = rng.normal(size=(5, 3)) * 3, rng.normal(size=(5, 3)) * 3
    labels = np.array([0, 2, 1, 1, 0])
    p, q = _softmax(teacher / 2.0), _softmax(student / 2.0)
    kl = float(np.mean(np.sum(p * np.log(p / q), axis=-1)) * 4.0)
    ce = float(np.mean(-np.log(_softmax(student)[np.arange(5), labels])))
    t, s = torch.tensor(teacher, dtype=torch.float32), torch.tensor(student, dtype=torch.float32)
    assert float(soft_target_kl(t, s, 2.0)) == pytest.approx(kl, rel=1e-5)
    assert float(distillation_loss(t, s, None, 2.0, 0.5)) == pytest.approx(kl, rel=1e-5)
    assert float(distillation_loss(t, s, torch.tensor(labels), 2.0, 0.3)) == pytest.approx(0.3 * kl + 0.7 * ce,
                                                                                            rel=1e-5)
    assert float(soft_target_kl(t, t, 2.0)) == pytest.approx(0.0, abs=1e-6)


def test_the_interleaving_is_kbert_mixed_batches_order():
    tf = pytest.importorskip("tensorflow")
    from kbert.training.distill import mixed_batches

    class Part:  # what mixed_batches reads of a TaskData
        def __init__(self, count, size):
            self.size = size
            self.dataset = tf.data.Dataset.range(count).map(
                lambda i: ({"token_ids": tf.fill([2, 3], i)}, tf.zeros([2])))

    data, batches = mixed_batches([(Part(5, 10), 1.0), (Part(11, 22), 0.0)], batch_size=2, seed=7)
    marks = [float(labelled[0]) for _, _, labelled in data]
    order = mixed_order([5, 11], seed=7)
    assert batches == 16 and list(np.bincount(order)) == [5, 11]
    assert [1.0 if part == 0 else 0.0 for part in order] == marks
    assert list(mixed_order([5, 11], seed=7)) == list(order) and list(mixed_order([5, 11], seed=8)) != list(order)


def test_grouped_batches_hold_every_row_once_in_rows_of_similar_length_and_keep_the_label_shares():
    rng = np.random.default_rng(0)
    lengths = rng.integers(1, 60, size=1000)
    strata = np.arange(1000) % 2
    batches = grouped_batches(lengths, strata, 32, np.random.default_rng(1), window=4)
    assert len(batches) == math.ceil(1000 / 32) and sorted(sum(batches, [])) == list(range(1000))
    spread = np.mean([np.ptp(lengths[b]) for b in batches if len(b) == 32])
    random_spread = np.mean([np.ptp(lengths[rng.permutation(1000)[:32]]) for _ in range(20)])
    assert spread < random_spread / 2
    off = [abs(int(strata[b].sum()) - len(b) / 2) for b in batches]  # a run's share, not exactly a half
    assert max(off) <= 4 and np.mean(off) < 1.5
    unstratified = grouped_batches(lengths, None, 32, np.random.default_rng(1), window=4)
    assert np.mean([abs(int(strata[b].sum()) - len(b) / 2) for b in unstratified]) > np.mean(off)
    small = grouped_batches(lengths[:40], None, 32, np.random.default_rng(1), window=4)  # one run: random
    assert sorted(len(b) for b in small) == [8, 32] and sorted(sum(small, [])) == list(range(40))


def test_welch_interval_of_equal_spreads():
    interval = welch_interval([1.0, 2.0, 3.0], [0.0, 1.0, 2.0])
    assert interval["mean"] == pytest.approx(1.0) and interval["df"] == pytest.approx(4.0)
    assert interval["high"] - interval["mean"] == pytest.approx(2.776 * math.sqrt(2 / 3))


def test_a_tiny_distillation_trains_the_student_and_writes_its_metrics(tmp_path):
    from transformers import BertConfig, BertModel

    words = ["good", "bad", "film", "a", "very", "dull", "fine", "plot"]
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *words]
    torch.manual_seed(0)
    for name, layers in (("teacher", 2), ("student", 1)):
        out = tmp_path / "work" / name
        config = BertConfig(vocab_size=len(vocab), hidden_size=16, num_hidden_layers=layers, num_attention_heads=2,
                            intermediate_size=32, max_position_embeddings=16)
        BertModel(config).save_pretrained(out)
        (out / "vocab.txt").write_text("\n".join(vocab) + "\n")
        np.savez(out / "head.npz", kernel=np.random.default_rng(0).normal(size=(16, 2)).astype(np.float32),
                 bias=np.zeros(2, np.float32), labels=np.array(["1", "0"]))  # the head's order, not sorted
    rng = np.random.default_rng(0)
    sentences = [" ".join(rng.choice(words, size=rng.integers(1, 6))) for _ in range(30)]
    (tmp_path / "train.tsv").write_text("sentence\tlabel\n" + "".join(f"{s}\t{i % 2}\n"
                                                                      for i, s in enumerate(sentences[:10])))
    (tmp_path / "dev.tsv").write_text("sentence\tlabel\n" + "".join(f"{s}\t{i % 2}\n"
                                                                    for i, s in enumerate(sentences[:6])))
    (tmp_path / "texts.txt").write_text("\n".join(sentences[10:]) + "\n\n")
    args = parse_args(["train", "--teacher", "unused", "--work", str(tmp_path / "work"), "--train",
                       str(tmp_path / "train.tsv"), "--unlabelled", str(tmp_path / "texts.txt"), "--validation",
                       str(tmp_path / "dev.tsv"), "--batch-size", "4", "--sequence-length", "8", "--epochs", "2",
                       "--learning-rate", "1e-3"])
    result = train(args, seed=3, out=tmp_path / "seed-3")
    assert result["batches_per_epoch"] == {"labelled": 3, "unlabelled": 5} and result["steps"] == 16
    assert len(result["losses"]) == 16 and all(np.isfinite(result["losses"]))
    assert 0 <= result["accuracy"] <= 100 and result["num_examples"] == 6
    stored = json.loads((tmp_path / "seed-3" / "metrics.json").read_text())
    assert stored["accuracy"] == result["accuracy"]
    assert (tmp_path / "work" / "teacher_logits.npz").exists()
    again = train(args, seed=3, out=tmp_path / "again")  # the cached teacher logits, the same seed: the same run
    assert again["losses"] == pytest.approx(result["losses"], rel=1e-5)
