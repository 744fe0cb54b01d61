"""A task from outside kbert: its own two modules and one `register` call give it the whole path, from
`kbert finetune` through `kbert evaluate` and `kbert export` to `kbert predict`.

The toy task is written into a temporary package here. It touches no kbert file: the registry derives the
command, the flags, the model directory and the export from its registration line.
"""

import json
import sys
import textwrap

import numpy as np
import pytest

import kbert
from kbert.cli.main import main
from kbert.tasks import registry

# The head: a classifier on the mean of the token vectors (kbert's own classifier reads [CLS]).
TOY_MODEL = '''
import keras

from kbert.models.bert_task_model import BertTaskModel


@keras.saving.register_keras_serializable(package="toy_tasks")
class MeanPoolClassifier(BertTaskModel):
    def __init__(self, encoder, num_classes, dropout=0.1, feature_based=False, **kwargs):
        self.num_classes = num_classes
        self._build_head_layers(encoder, num_classes, dropout, name="logits")

        def head(inputs, encoded):
            mask = keras.ops.cast(inputs["padding_mask"], "float32")[..., None]
            tokens = keras.ops.cast(encoded["sequence_output"], "float32")
            mean = keras.ops.sum(tokens * mask, axis=1) / keras.ops.sum(mask, axis=1)
            return self.output_dense(self.output_dropout(mean))

        self._build_task_model(encoder, dropout, feature_based, head, **kwargs)

    def head_config(self):
        return {"num_classes": self.num_classes}

    def default_loss(self):
        return keras.losses.SparseCategoricalCrossentropy(from_logits=True)
'''

# The task: reads plain text (a sentence per line) and labels each sentence by its own word count.
TOY_TASK = '''
import dataclasses
from typing import ClassVar

import numpy as np
import tensorflow as tf

import kbert.file_io as file_io
from kbert.tasks.base import Task, TaskData
from kbert.tasks.classification_data import classification_dataset
from kbert.tasks.serving import sentence_functions
from kbert.tasks.settings import TaskSettings
from toy_tasks.length_model import MeanPoolClassifier


@dataclasses.dataclass
class LengthSettings(TaskSettings):
    name: ClassVar[str] = "length"
    command: ClassVar[str] = "length"
    summary: ClassVar[str] = "a sentence -> long or short"

    max_short_words: int = dataclasses.field(default=3, metadata={"help": "the most words of a short sentence"})


@dataclasses.dataclass
class LengthTask(LengthSettings, Task):
    model_class: ClassVar[type] = MeanPoolClassifier

    def _read(self, source, split):
        lines = [line.strip() for line in file_io.read_text(source).splitlines() if line.strip()]
        return [{"text": line, "label": "long" if len(line.split()) > self.max_short_words else "short"}
                for line in lines]

    def prepare(self, source, examples):
        return dataclasses.replace(self, labels=["long", "short"])

    def dataset(self, examples, preprocessor, batch_size, training, seed=0, group_by_length=True,
                drop_remainder=False):
        data = classification_dataset(examples, preprocessor, self.labels, batch_size=batch_size,
                                      shuffle=training, seed=seed, with_labels=training,
                                      group_by_length=group_by_length, drop_remainder=drop_remainder)
        return TaskData(data, len(examples))

    def build_model(self, encoder, dropout=0.1, feature_based=False):
        return MeanPoolClassifier(encoder, len(self.labels), dropout=dropout, feature_based=feature_based)

    def check_model(self, model):
        if model.num_classes != len(self.labels):
            raise ValueError(f"{model.num_classes} outputs for labels {self.labels}")

    def score(self, examples, batches, extra):
        guess = np.argmax(np.concatenate([outputs for outputs, _ in batches]), -1)
        gold = np.array([self.labels.index(e["label"]) for e in examples])
        return {"accuracy": float(np.mean(guess == gold))}

    def serving_functions(self, inputs, pair=False):
        table = tf.constant(self.labels)

        def head(x, logits):
            return {"label": tf.gather(table, tf.argmax(logits, -1)), "logits": logits}

        return sentence_functions(inputs, pair, head)
'''

REGISTRATION = '''
from kbert.tasks.registry import register

register("length", "toy_tasks.length:LengthTask", settings="toy_tasks.length:LengthSettings",
         model="toy_tasks.length_model:MeanPoolClassifier")
'''


@pytest.fixture
def toy_tasks(tmp_path, monkeypatch):
    package = tmp_path / "plugins" / "toy_tasks"
    package.mkdir(parents=True)
    for name, source in {"__init__": REGISTRATION, "length": TOY_TASK, "length_model": TOY_MODEL}.items():
        (package / f"{name}.py").write_text(textwrap.dedent(source))
    monkeypatch.syspath_prepend(str(package.parent))
    import toy_tasks  # noqa: F401  (registers the task)

    yield package
    registry.unregister("length")
    for module in [m for m in sys.modules if m == "toy_tasks" or m.startswith("toy_tasks.")]:
        del sys.modules[module]


def sentences(n: int, seed: int) -> str:
    rng = np.random.default_rng(seed)
    words = ["the", "good", "cat", "bad", "dog", "sat"]
    return "\n".join(" ".join(rng.choice(words, size=rng.integers(1, 7))) for _ in range(n)) + "\n"


def test_a_registered_task_runs_finetune_evaluate_export_predict(toy_tasks, tmp_path, tiny_init, capsys):
    assert "length" in registry.COMMANDS and "length" in registry.TASKS
    train, dev = tmp_path / "train.txt", tmp_path / "dev.txt"
    train.write_text(sentences(48, 0))
    dev.write_text(sentences(16, 1))
    out = tmp_path / "length_model"
    assert main(["finetune", "length", "--init", str(tiny_init), "--train", str(train), "--validation", str(dev),
                 "--max-short-words", "2", "--sequence-length", "16", "--epochs", "1", "--batch-size", "8",
                 "--out", str(out), "--verbose", "0", "--mixed-precision", "none"]) == 0
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["num_examples"] == 16

    model = kbert.load_model(out)
    assert type(model).__name__ == "MeanPoolClassifier"
    assert type(model.task).__name__ == "LengthTask" and model.task.max_short_words == 2
    assert model.task.labels == ["long", "short"]

    capsys.readouterr()
    assert main(["evaluate", str(out), "--input", str(dev), "--verbose", "0"]) == 0
    assert json.loads(capsys.readouterr().out)["accuracy"] == pytest.approx(metrics["accuracy"])

    exported = tmp_path / "export"
    assert main(["export", str(out), "--out", str(exported)]) == 0
    texts = dev.read_text().splitlines()[:4]
    capsys.readouterr()
    assert main(["predict", str(exported), *texts]) == 0
    answers = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    # The export answers as the loaded Keras model does (float32: the export pads to the longest text).
    logits = np.asarray(model.predict_on_batch(model.preprocessor(texts)))
    assert [a["label"] for a in answers] == [model.task.labels[i] for i in logits.argmax(-1)]
    np.testing.assert_allclose([a["logits"] for a in answers], logits, atol=1e-4)


def test_registering_a_taken_name_or_a_bad_path_is_an_error():
    with pytest.raises(ValueError, match="'classify' is registered already"):
        registry.register("classify", "somewhere:Else")
    with pytest.raises(ValueError, match="not a 'module:Class' path"):
        registry.register("other", "no_class_here")
