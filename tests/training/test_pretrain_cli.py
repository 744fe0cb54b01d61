"""`kbert pretrain` end to end on a structured generated corpus: it learns, saves, loads and resumes."""

import json
import random

import keras
import numpy as np
import pytest

import kbert
from kbert.cli.main import main
from tests.training._training_subprocess import run_cli_on_logical_cpus

TOPICS = [
    (["cat", "dog", "cow"], ["eats", "sees", "likes"]),
    (["car", "bus", "van"], ["hits", "passes", "tows"]),
    (["king", "queen", "knight"], ["rules", "meets", "serves"]),
    (["ship", "boat", "raft"], ["sails", "sinks", "floats"]),
    (["tree", "bush", "vine"], ["grows", "shades", "drops"]),
    (["sun", "moon", "star"], ["lights", "warms", "guides"]),
]


def write_corpus(path, documents=80, seed=0):
    """Each document keeps to one topic: "the cat eats the dog ." x 4-7; a noun always takes the same verb.

    Masked LM can learn "the", "." and each noun's verb exactly and guess nouns within the topic; NSP can
    tell a random next sentence by its other topic.
    """
    rng = random.Random(seed)
    lines = []
    for _ in range(documents):
        nouns, verbs = rng.choice(TOPICS)
        for _ in range(rng.randint(4, 7)):
            subject = rng.randrange(3)
            lines.append(f"the {nouns[subject]} {verbs[subject]} the {rng.choice(nouns)} .")
        lines.append("")
    path.write_text("\n".join(lines), encoding="utf-8")
    words = sorted({w for nouns, verbs in TOPICS for w in nouns + verbs} | {"the", "."})
    return ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + words


def write_topic_task(folder, splits=(("train", 64), ("dev", 32)), seed=0):
    """A labelled TSV a split (`sentence`, `label`): a sentence of the first topic is 0, of the second 1."""
    rng = random.Random(seed)
    folder.mkdir(parents=True, exist_ok=True)
    for split, rows in splits:
        lines = ["sentence\tlabel"]
        for _ in range(rows):
            label = rng.randrange(2)
            nouns, verbs = TOPICS[label]
            lines.append(f"the {rng.choice(nouns)} {rng.choice(verbs)} the {rng.choice(nouns)} .\t{label}")
        (folder / f"{split}.tsv").write_text("\n".join(lines) + "\n", encoding="utf-8")


@pytest.fixture
def corpus(tmp_path):
    vocab = write_corpus(tmp_path / "corpus.txt")
    (tmp_path / "vocab.txt").write_text("\n".join(vocab) + "\n")
    return tmp_path


MODEL = {"hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 2, "intermediate_size": 64,
         "max_position_embeddings": 32, "hidden_dropout_prob": 0.0, "attention_probs_dropout_prob": 0.0}


def test_pretrain_from_tfrecords_learns_and_loads(corpus, capsys):
    data = corpus / "data"
    assert main(["create-pretraining-data", "--input", str(corpus / "corpus.txt"), "--vocab",
                 str(corpus / "vocab.txt"), "--out", str(data), "--sequence-length", "32",
                 "--dupe-factor", "5", "--masking", "dynamic"]) == 0
    (corpus / "model.json").write_text(json.dumps(MODEL))
    out = corpus / "run"
    assert main(["pretrain", "--train", str(data), "--config", str(corpus / "model.json"),
                 "--objective", "nsp", "--steps", "400", "--batch-size", "32", "--learning-rate", "5e-3",
                 "--warmup-steps", "30", "--save-every-steps", "100", "--keep-checkpoints", "0", "--out", str(out),
                 "--verbose", "0"]) == 0
    history = json.loads((out / "history.json").read_text())
    assert history["steps"] == 400
    final = history["final_metrics"]
    # Majority baseline: "the" is 2 of the 6 tokens of a sentence, so about a third of masked tokens.
    # 400 steps reach 0.54-0.58 depending on the update rule's rounding; 0.5 is well clear of a third.
    assert final["mlm_accuracy"] > 0.5, final
    assert final["sentence_accuracy"] > 0.6, final  # chance is 0.5
    encoder = kbert.load_pretrained(out)
    assert encoder.bert_config.hidden_size == 32
    # --keep-checkpoints 0 keeps every checkpoint (the default keeps the newest 3).
    assert sorted(p.name for p in (out / "checkpoints").iterdir()) == [
        f"ckpt-{step}.weights.h5" for step in (100, 200, 300, 400)]
    # The output is also a valid --init: a second phase continues from it (here SOP-free, MLM only).
    out2 = corpus / "phase2"
    assert main(["pretrain", "--train", str(data), "--init", str(out), "--objective", "none",
                 "--steps", "5", "--batch-size", "8", "--out", str(out2), "--verbose", "0"]) == 0
    assert kbert.load_pretrained(out2).bert_config.hidden_size == 32


def test_pretrain_from_raw_text_with_sop(corpus):
    out = corpus / "raw"
    assert main(["pretrain", "--train", str(corpus / "corpus.txt"), "--vocab", str(corpus / "vocab.txt"),
                 "--preset", "tiny", "--objective", "sop", "--steps", "4", "--batch-size", "8",
                 "--sequence-length", "32", "--whole-word-masking", "--mixed-precision", "mixed_bfloat16",
                 "--out", str(out), "--verbose", "0"]) == 0
    assert keras.config.dtype_policy().name == "float32"  # the run's policy is put back afterwards
    history = json.loads((out / "history.json").read_text())
    assert history["objective"] == "sop" and "sentence_accuracy" in history["final_metrics"]
    assert kbert.load_pretrained(out).bert_config.num_hidden_layers == 2
    assert (out / "vocab.txt").read_text() == (corpus / "vocab.txt").read_text()


def test_encoder_dropout_is_for_the_run_and_the_saved_model_keeps_its_own(corpus, monkeypatch):
    from kbert.models import families

    built = []

    class RecordingEncoder(kbert.BertEncoder):
        def __init__(self, **fields):
            built.append((fields["hidden_dropout_prob"], fields["attention_probs_dropout_prob"]))
            super().__init__(**fields)

    # The family table builds every BERT encoder: fresh ones and those filled from a checkpoint.
    monkeypatch.setitem(families.FAMILIES, "bert", (families.FAMILIES["bert"][0], RecordingEncoder))
    common = ["--vocab", str(corpus / "vocab.txt"), "--objective", "none", "--steps", "2", "--batch-size", "4",
              "--sequence-length", "32", "--encoder-dropout", "0", "--verbose", "0"]
    assert main(["pretrain", "--train", str(corpus / "corpus.txt"), "--preset", "tiny",
                 "--out", str(corpus / "p1"), *common]) == 0
    assert built == [(0.0, 0.0)]  # the run trained without dropout
    saved = kbert.load_pretrained(corpus / "p1").bert_config
    assert (saved.hidden_dropout_prob, saved.attention_probs_dropout_prob) == (0.1, 0.1)  # the preset's

    # From --init, a rate set under `model` is the model's own; --encoder-dropout still rules the run.
    (corpus / "phase2.yaml").write_text("model:\n  attention_probs_dropout_prob: 0.2\n")
    built.clear()
    assert main(["pretrain", "--train", str(corpus / "corpus.txt"), "--init", str(corpus / "p1"),
                 "--config", str(corpus / "phase2.yaml"), "--out", str(corpus / "p2"), *common]) == 0
    assert built[0] == (0.0, 0.0)
    saved = kbert.convert.checkpoints.read_config(corpus / "p2")
    assert (saved.hidden_dropout_prob, saved.attention_probs_dropout_prob) == (0.1, 0.2)


def test_save_pretrained_config_changes_dropout_only(tmp_path):
    import dataclasses

    encoder = kbert.BertEncoder(**{**MODEL, "vocab_size": 20})
    with pytest.raises(ValueError, match="dropout rates only"):
        kbert.save_pretrained(encoder, tmp_path, config=dataclasses.replace(encoder.bert_config, hidden_size=64))


@pytest.mark.slow
def test_pretrain_mirrored_over_two_logical_cpus(corpus):
    # BERT features hold a boolean padding mask, which Keras 3.15's symbolic build would mean-reduce.
    out = corpus / "mirrored"
    done = run_cli_on_logical_cpus(["pretrain", "--train", corpus / "corpus.txt", "--vocab",
                                    corpus / "vocab.txt", "--preset", "tiny", "--steps", 4, "--batch-size", 8,
                                    "--sequence-length", 32, "--strategy", "mirrored", "--out", out,
                                    "--verbose", 0])
    assert done.returncode == 0, done.stderr[-3000:]
    history = json.loads((out / "history.json").read_text())  # --batch-size is the global batch
    assert history["replicas"] == 2 and history["global_batch_size"] == 8 and history["steps"] == 4
    assert np.isfinite(history["final_metrics"]["loss"])


def test_pretrain_errors_are_named(corpus, capsys):
    assert main(["pretrain", "--train", str(corpus / "corpus.txt"), "--steps", "2",
                 "--out", str(corpus / "x"), "--verbose", "0"]) == 1
    assert "--vocab" in capsys.readouterr().err
    data = corpus / "sop_data"
    assert main(["create-pretraining-data", "--input", str(corpus / "corpus.txt"), "--vocab",
                 str(corpus / "vocab.txt"), "--out", str(data), "--sequence-length", "32",
                 "--objective", "sop"]) == 0
    assert main(["pretrain", "--train", str(data), "--objective", "nsp", "--steps", "2",
                 "--out", str(corpus / "y"), "--verbose", "0"]) == 1
    assert "objective 'sop'" in capsys.readouterr().err


def test_config_file_fields(tmp_path):
    from kbert.training.pretrain_config import PretrainConfig

    (tmp_path / "run.yaml").write_text("train: data\nsteps: 7\nhidden_size: 64\nmodel:\n  num_hidden_layers: 3\n")
    config = PretrainConfig.from_file(tmp_path / "run.yaml", steps=9, out="o")
    assert config.steps == 9 and config.train == "data" and config.out == "o"
    assert config.model == {"num_hidden_layers": 3, "hidden_size": 64}
    (tmp_path / "bad.json").write_text(json.dumps({"stepz": 3}))
    with pytest.raises(ValueError, match="stepz"):
        PretrainConfig.from_file(tmp_path / "bad.json")
    with pytest.raises(ValueError, match="encoder_dropout must be in"):
        PretrainConfig(train="data", out="o", encoder_dropout=1.0).validate()

