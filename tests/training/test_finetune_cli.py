"""`kbert finetune` / `kbert evaluate` end to end on tiny synthetic data and a tiny model directory."""

import json
import re

import pytest

import kbert
from kbert.cli.main import main
from tests.conftest import TINY_VOCAB
from tests.training.conftest import keyword_rows, write_tsv


def test_contract_command(tmp_path, tiny_init, capsys):
    train = write_tsv(tmp_path / "train.tsv", ["sentence", "label"], keyword_rows(64, 0))
    dev = write_tsv(tmp_path / "dev.tsv", ["sentence", "label"], keyword_rows(20, 1))
    out = tmp_path / "OUT"
    code = main(["finetune", "classify", "--init", str(tiny_init), "--train", str(train), "--validation",
                 str(dev), "--text-column", "sentence", "--label-column", "label", "--sequence-length", "64",
                 "--epochs", "1", "--batch-size", "32", "--learning-rate", "5e-5", "--out", str(out)])
    assert code == 0
    metrics = json.loads((out / "metrics.json").read_text())
    assert 0.0 <= metrics["accuracy"] <= 1.0 and metrics["num_examples"] == 20
    model = kbert.load_model(out)
    assert isinstance(model, kbert.BertClassifier)
    # `task` is the Task object that was trained, with its settings: the model carries no copies of them.
    assert model.task == kbert.ClassificationTask(text_column="sentence", label_column="label", labels=["0", "1"],
                                                  regression=False)
    assert model.task.info()["task"] == "classify"
    assert model.tokenizer.get_vocabulary() == TINY_VOCAB
    logits = model.predict_on_batch(model.preprocessor(["the good cat"]))
    assert logits.shape == (1, 2)
    # `kbert evaluate` prints the same metrics.
    capsys.readouterr()
    assert main(["evaluate", str(out), "--input", str(dev), "--verbose", "0"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["accuracy"] == pytest.approx(metrics["accuracy"])
    assert printed["matthews_corrcoef"] == pytest.approx(metrics["matthews_corrcoef"])


def test_classify_from_random_weights_learns_keyword(tmp_path, tiny_vocab_file):
    train = write_tsv(tmp_path / "train.tsv", ["text", "label"], keyword_rows(256, 2))
    dev = write_tsv(tmp_path / "dev.tsv", ["text", "label"], keyword_rows(64, 3))
    out = tmp_path / "scratch"
    code = main(["finetune", "classify", "--preset", "tiny", "--vocab", str(tiny_vocab_file), "--train",
                 str(train), "--validation", str(dev), "--sequence-length", "16", "--epochs", "6",
                 "--batch-size", "16", "--learning-rate", "1e-3", "--out", str(out), "--verbose", "0"])
    assert code == 0
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["accuracy"] >= 0.95
    assert kbert.load_model(out).encoder.bert_config.num_hidden_layers == 2  # the tiny preset


def test_preset_directory_builds_its_architecture_with_fresh_weights(tmp_path, tiny_init, tiny_vocab_file):
    # The random-init baseline of a pretrained model: its shape (hidden 32, intermediate 64: no preset's),
    # not its weights. A learning rate of 1e-9 keeps the trained weights within 1e-6 of their start.
    train = write_tsv(tmp_path / "train.tsv", ["text", "label"], keyword_rows(32, 4))
    out = tmp_path / "baseline"
    code = main(["finetune", "classify", "--preset", str(tiny_init), "--vocab", str(tiny_vocab_file), "--train",
                 str(train), "--sequence-length", "16", "--epochs", "1", "--batch-size", "16",
                 "--learning-rate", "1e-9", "--out", str(out), "--verbose", "0"])
    assert code == 0
    encoder = kbert.load_model(out).encoder
    checkpoint = kbert.load_pretrained(tiny_init)
    assert encoder.bert_config == checkpoint.bert_config
    trained, start = encoder.weights[0], checkpoint.weights[0]
    assert trained.path == start.path == "embeddings/token_embedding/embeddings"
    assert abs(trained.numpy() - start.numpy()).max() > 1e-2  # fresh draws of std 0.02, not the checkpoint's


def error_of(capsys, argv: list[str], status: int = 1) -> str:
    """Runs the CLI expecting a user error: the exit status, and the one-line message, last on stderr (after
    the run's status lines, such as the precision it chose)."""
    capsys.readouterr()
    assert main(argv) == status
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err and captured.err.splitlines()[-1].startswith(f"kbert {argv[0]}: error: ")
    return captured.err


def test_bad_row_names_file_and_line(tmp_path, tiny_init, capsys):
    rows = keyword_rows(4, 0)
    train = tmp_path / "train.tsv"
    train.write_text("sentence\tlabel\n" + "\n".join("\t".join(r) for r in rows[:2]) + "\n\t1\n")
    err = error_of(capsys, ["finetune", "classify", "--init", str(tiny_init), "--train", str(train),
                            "--text-column", "sentence", "--out", str(tmp_path / "o"), "--verbose", "0"])
    assert re.search(r"train\.tsv:4", err)


def test_without_init_or_vocab_is_refused(tmp_path, capsys):
    err = error_of(capsys, ["finetune", "classify", "--train", "x.tsv", "--out", str(tmp_path / "o")], status=2)
    assert "--vocab is required" in err


def test_unknown_validation_label_is_named(tmp_path, tiny_init, capsys):
    train = write_tsv(tmp_path / "train.tsv", ["text", "label"], keyword_rows(8, 0))
    dev = write_tsv(tmp_path / "dev.tsv", ["text", "label"], [("the cat", "maybe")])
    err = error_of(capsys, ["finetune", "classify", "--init", str(tiny_init), "--train", str(train),
                            "--validation", str(dev), "--epochs", "1", "--out", str(tmp_path / "o"), "--verbose", "0"])
    assert "maybe" in err


def test_headerless_tsv_by_column_numbers(tmp_path, tiny_init, capsys):
    # GLUE's raw CoLA layout: source, label, original label (or blank), sentence; no header row.
    rows = [("gj04", label, "", text) for text, label in keyword_rows(48, 6)]
    train = tmp_path / "train.tsv"
    train.write_text("".join("\t".join(r) + "\n" for r in rows), encoding="utf-8")
    out = tmp_path / "cola"
    assert main(["finetune", "classify", "--init", str(tiny_init), "--train", str(train), "--validation",
                 str(train), "--no-header", "--text-column", "3", "--label-column", "1", "--sequence-length",
                 "16", "--epochs", "1", "--out", str(out), "--verbose", "0"]) == 0
    model = kbert.load_model(out)
    assert model.task.labels == ["0", "1"] and model.task.header is False
    assert model.task.text_column == 3 and model.task.label_column == 1
    # Every line is an example (none was taken for a header), and evaluate reads the file the same way.
    assert json.loads((out / "metrics.json").read_text())["num_examples"] == 48
    capsys.readouterr()
    assert main(["evaluate", str(out), "--input", str(train), "--verbose", "0"]) == 0
    assert json.loads(capsys.readouterr().out)["num_examples"] == 48
    # A bad row is named by file and line, as with a header.
    with open(train, "a", encoding="utf-8") as handle:
        handle.write("gj04\t1\t\n")
    err = error_of(capsys, ["finetune", "classify", "--init", str(tiny_init), "--train", str(train),
                            "--no-header", "--text-column", "3", "--label-column", "1", "--out",
                            str(tmp_path / "o"), "--verbose", "0"])
    assert "train.tsv:49: missing column 3" in err


@pytest.mark.parametrize("flag, grouped", [([], True), (["--no-group-by-length"], False)])
def test_group_by_length_flag_reaches_the_training_pipeline(tmp_path, tiny_init, monkeypatch, flag, grouped):
    from kbert.tasks import ClassificationTask

    calls = []
    build = ClassificationTask.dataset

    def recorded(self, *args, **kwargs):
        calls.append((kwargs.get("training"), kwargs.get("group_by_length")))
        return build(self, *args, **kwargs)

    monkeypatch.setattr(ClassificationTask, "dataset", recorded)
    train = write_tsv(tmp_path / "train.tsv", ["sentence", "label"], keyword_rows(32, 7))
    assert main(["finetune", "classify", "--init", str(tiny_init), "--train", str(train), "--text-column",
                 "sentence", "--sequence-length", "16", "--epochs", "1", "--out", str(tmp_path / "o"),
                 "--verbose", "0", *flag]) == 0
    assert calls == [(True, grouped)]
