"""Held-out evaluation of a pretraining run: fixed masks, and one JSON per checkpoint plus TensorBoard."""

import importlib.util
import json

import numpy as np

from kbert.cli.main import main
from kbert.pretraining_data import CreatePretrainingDataConfig, heldout_from_directory, heldout_from_text
from kbert.text.bert_tokenizer import BertTokenizer
from tests.training.test_pretrain_cli import MODEL, write_corpus


def arrays(dataset):
    batches = list(dataset.as_numpy_iterator())
    return {k: np.concatenate([b[k] for b in batches]) for k in batches[0]}


def test_heldout_text_has_the_same_masks_every_time(tmp_path):
    vocab = write_corpus(tmp_path / "heldout.txt", documents=40, seed=1)
    tokenizer = BertTokenizer(vocab)
    config = CreatePretrainingDataConfig(input=[str(tmp_path / "heldout.txt")], sequence_length=32,
                                         objective="sop", seed=7, dupe_factor=5, masking="dynamic")
    first = arrays(heldout_from_text(config, tokenizer, batch_size=8, max_instances=30))
    again = arrays(heldout_from_text(config, tokenizer, batch_size=8, max_instances=30))
    assert first["token_ids"].shape == (30, 32) and first["masked_ids"].shape == (30, 5)  # round(32 * 0.15)
    for name in first:
        np.testing.assert_array_equal(first[name], again[name])
    mask_id = vocab.index("[MASK]")
    assert (first["token_ids"] == mask_id).sum() > 0 and first["masked_weights"].sum() > 30
    # The run's own seed, dupe factor and masking do not matter: held-out masks are fixed.
    other = arrays(heldout_from_text(CreatePretrainingDataConfig(
        input=config.input, sequence_length=32, objective="sop", seed=99), tokenizer, 8, 30))
    np.testing.assert_array_equal(first["masked_positions"], other["masked_positions"])


def test_heldout_directory_is_read_the_same_way_every_time(tmp_path):
    vocab = write_corpus(tmp_path / "heldout.txt", documents=20, seed=1)
    (tmp_path / "vocab.txt").write_text("\n".join(vocab) + "\n")
    assert main(["create-pretraining-data", "--input", str(tmp_path / "heldout.txt"), "--vocab",
                 str(tmp_path / "vocab.txt"), "--out", str(tmp_path / "dyn"), "--sequence-length", "32",
                 "--masking", "dynamic", "--dupe-factor", "2"]) == 0
    first = arrays(heldout_from_directory(tmp_path / "dyn", batch_size=16, max_instances=40))
    again = arrays(heldout_from_directory(tmp_path / "dyn", batch_size=16, max_instances=40))
    assert len(first["token_ids"]) == 40
    for name in first:
        np.testing.assert_array_equal(first[name], again[name])


def test_pretrain_scores_heldout_text_at_every_checkpoint(tmp_path, capsys):
    vocab = write_corpus(tmp_path / "train.txt", documents=60)
    write_corpus(tmp_path / "heldout.txt", documents=10, seed=3)
    (tmp_path / "vocab.txt").write_text("\n".join(vocab) + "\n")
    (tmp_path / "model.json").write_text(json.dumps(MODEL))
    out = tmp_path / "run"
    assert main(["pretrain", "--train", str(tmp_path / "train.txt"), "--vocab", str(tmp_path / "vocab.txt"),
                 "--config", str(tmp_path / "model.json"), "--sequence-length", "32", "--steps", "30",
                 "--batch-size", "16", "--learning-rate", "5e-3", "--warmup-steps", "5",
                 "--save-every-steps", "10", "--heldout-text", str(tmp_path / "heldout.txt"),
                 "--out", str(out), "--verbose", "0"]) == 0
    files = sorted(p.name for p in (out / "heldout").iterdir())
    assert files == ["step_000010.json", "step_000020.json", "step_000030.json"]
    curve = [json.loads((out / "heldout" / name).read_text()) for name in files]
    assert [c["step"] for c in curve] == [10, 20, 30]
    assert all(0.0 <= c["mlm_accuracy"] <= 1.0 and 0.0 <= c["sentence_accuracy"] <= 1.0 for c in curve)
    assert curve[-1]["mlm_accuracy"] > curve[0]["mlm_accuracy"]  # it learns "the" and "." at least
    history = json.loads((out / "history.json").read_text())
    assert history["heldout"]["mlm_accuracy"] == curve[-1]["mlm_accuracy"]
    assert "heldout_mlm_accuracy" in capsys.readouterr().out
    if importlib.util.find_spec("tensorboard"):
        assert list((out / "logs" / "heldout").glob("events.out.tfevents.*"))


def test_heldout_text_and_data_are_exclusive(tmp_path, capsys):
    assert main(["pretrain", "--train", "x", "--out", str(tmp_path / "o"), "--heldout-text", "a",
                 "--heldout-data", "b"]) == 1
    assert "not both" in capsys.readouterr().err
