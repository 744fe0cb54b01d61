"""The registry: task classes found by name on first use, and `kbert finetune` flags from TF-free settings."""

from __future__ import annotations

import dataclasses

from kbert.tasks.registry import COMMANDS, REGISTRY, TASKS, get_task


def test_each_command_is_a_task_that_extends_its_settings():
    for command, settings in COMMANDS.items():
        task = REGISTRY[settings.name]
        assert settings.command == command == task.command
        assert issubclass(task, settings)
        # The task adds behaviour, not settings: its flags are all in the settings module.
        assert [f.name for f in dataclasses.fields(task)] == [f.name for f in dataclasses.fields(settings)]


def test_names_and_tasks():
    assert list(REGISTRY) == ["classify", "regress", "tag", "qa", "embed", "encoder"]
    assert all(REGISTRY[name].name == name for name in REGISTRY)
    assert TASKS == ("classify", "regress", "tag", "qa", "embed")
    assert "qa" in REGISTRY and "nope" not in REGISTRY


def test_settings_round_trip_through_the_task():
    task = get_task("classify", text_column="sentence", header=False)
    assert type(task).__name__ == "ClassificationTask"
    assert task.info() == {"task": "classify", "labels": None, "text_column": "sentence", "text_pair_column": None,
                           "label_column": "label", "header": False, "regression": None}


def test_public_names_come_from_the_registry_lines():
    import kbert
    import kbert.tasks
    from kbert.tasks.registry import public_names

    names = public_names()
    assert names["ClassificationTask"] == "kbert.tasks.classification"
    assert names["BertQuestionAnswerer"] == "kbert.tasks.question_answering_model"
    for name in REGISTRY:  # every task class, and every task's model class, is public in both packages
        task = REGISTRY[name]
        for cls in (task, task.model_class):
            if cls is not None:
                assert getattr(kbert, cls.__name__) is cls and getattr(kbert.tasks, cls.__name__) is cls
