"""`kbert evaluate DIR --input SRC [task settings]`: the two-step parse and the old flags."""

import dataclasses
import json
from collections.abc import Sequence

import pytest

from kbert.cli.evaluate import task_flags
from kbert.cli.main import main
from kbert.tasks.classification_settings import ClassificationSettings


@dataclasses.dataclass
class RangeSettings:
    span: Sequence[int] | None = dataclasses.field(default=None, metadata={"aliases": ("range",)})


def test_task_settings_are_flags():
    assert task_flags(ClassificationSettings, ["--text-column", "sentence", "--no-header", "--label-column", "2"]) == {
        "text_column": "sentence", "header": False, "label_column": 2}
    assert task_flags(ClassificationSettings, []) == {}


def test_a_flag_the_task_lacks_is_an_error(capsys):
    with pytest.raises(SystemExit) as exit_info:
        task_flags(ClassificationSettings, ["--doc-stride", "64"])
    assert exit_info.value.code == 2 and "unrecognized arguments: --doc-stride" in capsys.readouterr().err


def test_a_settings_old_flag_name_still_works(capsys):
    assert task_flags(RangeSettings, ["--range", "0:3"]) == {"span": (0, 3)}
    assert "warning: --range is deprecated; use --span" in capsys.readouterr().err
    with pytest.raises(SystemExit):  # only the task whose field names it has the old flag
        task_flags(ClassificationSettings, ["--range", "0:3"])


def test_command_line_reaches_evaluate_model(tmp_path, monkeypatch, capsys):
    import kbert.training.finetune as finetune_module

    (tmp_path / "task.json").write_text(json.dumps({"task": "classify", "labels": ["0", "1"]}))
    calls = []
    monkeypatch.setattr(finetune_module, "evaluate_model",
                        lambda *args, **kwargs: calls.append((args, kwargs)) or {"accuracy": 1.0})
    assert main(["evaluate", str(tmp_path), "--input", "dev.tsv", "--text-column", "s", "--quiet"]) == 0
    assert json.loads(capsys.readouterr().out) == {"accuracy": 1.0}
    assert main(["evaluate", str(tmp_path), "--data", "old.tsv", "--batch-size", "8"]) == 0
    assert "warning: --data is deprecated; use --input" in capsys.readouterr().err
    assert calls == [((str(tmp_path), "dev.tsv"), {"batch_size": 64, "max_examples": None, "verbose": 0,
                                                   "text_column": "s"}),
                     ((str(tmp_path), "old.tsv"), {"batch_size": 8, "max_examples": None, "verbose": 1})]
