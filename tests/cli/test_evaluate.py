"""`kbert evaluate DIR --input SRC [task settings]`: the two-step parse."""

import json

import pytest

from kbert.cli.evaluate import task_flags
from kbert.cli.main import main
from kbert.tasks.classification_settings import ClassificationSettings


def test_task_settings_are_flags():
    assert task_flags(ClassificationSettings, ["--text-column", "sentence", "--no-header", "--label-column", "2"]) == {
        "text_column": "sentence", "header": False, "label_column": 2}
    assert task_flags(ClassificationSettings, []) == {}


def test_a_flag_the_task_lacks_is_an_error(capsys):
    with pytest.raises(SystemExit) as exit_info:
        task_flags(ClassificationSettings, ["--doc-stride", "64"])
    assert exit_info.value.code == 2 and "unrecognized arguments: --doc-stride" in capsys.readouterr().err


def test_command_line_reaches_evaluate_model(tmp_path, monkeypatch, capsys):
    import kbert.training.finetune as finetune_module

    (tmp_path / "task.json").write_text(json.dumps({"task": "classify", "labels": ["0", "1"]}))
    calls = []
    monkeypatch.setattr(finetune_module, "evaluate_model",
                        lambda *args, **kwargs: calls.append((args, kwargs)) or {"accuracy": 1.0})
    assert main(["evaluate", str(tmp_path), "--input", "dev.tsv", "--text-column", "s", "--verbose", "0"]) == 0
    assert json.loads(capsys.readouterr().out) == {"accuracy": 1.0}
    assert main(["evaluate", str(tmp_path), "--input", "other.tsv", "--batch-size", "8"]) == 0
    assert calls == [((str(tmp_path), "dev.tsv"), {"batch_size": 64, "max_examples": None, "verbose": 0,
                                                   "text_column": "s"}),
                     ((str(tmp_path), "other.tsv"), {"batch_size": 8, "max_examples": None, "verbose": 1})]
