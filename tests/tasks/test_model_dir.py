"""`kbert.save_model` writes the weights without the optimizer's state, in one rename, and the task whole;
`load_model` reloads them, the task as `model.task`."""

import dataclasses
import json
import os
import pathlib
import subprocess
import sys
import zipfile

import h5py
import numpy as np
import pytest

import kbert
from kbert.tasks import EncoderTask
from kbert.version import __version__
from tests.conftest import TINY_VOCAB

ROOT = pathlib.Path(__file__).resolve().parents[2]


def tiny_encoder() -> kbert.BertEncoder:
    return kbert.BertEncoder(vocab_size=len(TINY_VOCAB), hidden_size=16, num_hidden_layers=1,
                             num_attention_heads=2, intermediate_size=32, max_position_embeddings=16)


# Each task with settings other than its defaults, and the model it builds.
TASKS = {
    "classify": kbert.ClassificationTask(text_column="sentence", text_pair_column=2, header=False,
                                         labels=["neg", "neu", "pos"], regression=False),
    "regress": kbert.RegressionTask(text_column="a", label_column="score"),
    "tag": kbert.TaggingTask(tag_column="pos", tag_format="spaces", labels=["O", "B-X", "I-X"]),
    "qa": kbert.QuestionAnsweringTask(doc_stride=32, max_answer_length=12, null_score_diff_threshold=0.5,
                                      strict_answers=True, train_articles=[0, 40], validation_articles=None),
}


@pytest.mark.parametrize("name", TASKS)
def test_the_task_travels_whole_into_and_out_of_the_directory(name, tmp_path):
    task = TASKS[name]
    model = task.build_model(tiny_encoder())
    assert kbert.save_model(model, tmp_path / "m", kbert.BertTokenizer(TINY_VOCAB), task, sequence_length=12,
                            truncate="waterfall") == tmp_path / "m"

    saved = json.loads((tmp_path / "m" / "task.json").read_text())
    # The keys of earlier releases: the task's info, then the packing and the version.
    assert saved == {**task.info(), "sequence_length": 12, "truncate": "waterfall", "kbert_version": __version__}
    restored = kbert.load_model(tmp_path / "m", compile=False)
    assert type(restored.task) is type(task) and restored.task == task
    assert dataclasses.asdict(restored.task) == dataclasses.asdict(task)
    assert restored.task is not task and restored.task.info() == task.info()
    assert (restored.preprocessor.sequence_length, restored.preprocessor.truncate) == (12, "waterfall")
    assert restored.tokenizer.get_vocabulary() == TINY_VOCAB
    # Only the task: no copies of its fields beside it.
    for gone in ("label_names", "task_name", "task_info"):
        assert not hasattr(restored, gone), gone


@pytest.mark.parametrize("task", [["neg", "pos"], None, "classify", {"task": "classify", "labels": ["neg", "pos"]}],
                         ids=["labels", "none", "name", "info"])
def test_save_model_takes_a_task_not_its_labels(task, tmp_path):
    with pytest.raises(TypeError, match=r"save_model\(model, directory, tokenizer, task, .*kbert.tasks.Task"):
        kbert.save_model(kbert.BertClassifier(tiny_encoder(), 2), tmp_path, kbert.BertTokenizer(TINY_VOCAB), task)
    assert not list(tmp_path.iterdir())  # nothing written


@pytest.mark.parametrize("task, model, names", [
    (kbert.ClassificationTask(labels=["a", "b"]), lambda e: kbert.BertTokenClassifier(e, 2),
     ["classify", "ClassificationTask", "BertTokenClassifier"]),
    (kbert.TaggingTask(labels=["O"]), lambda e: kbert.BertClassifier(e, 1), ["tag", "TaggingTask", "BertClassifier"]),
    (kbert.ClassificationTask(labels=["a"]), lambda e: kbert.BertClassifier(e, 1),  # a regression model
     ["classify", "ClassificationTask", "BertClassifier"]),
    (kbert.RegressionTask(), lambda e: kbert.BertClassifier(e, 2), ["regress", "RegressionTask", "BertClassifier"]),
    (kbert.QuestionAnsweringTask(), lambda e: kbert.BertClassifier(e, 2), ["qa", "BertClassifier"]),
    (EncoderTask(), lambda e: kbert.BertClassifier(e, 2), ["encoder", "EncoderTask", "BertClassifier"]),
], ids=["classify-tagger", "tag-classifier", "classify-regressor", "regress-classifier", "qa-classifier",
        "encoder"])
def test_a_task_and_a_model_that_do_not_match_are_an_error_naming_both(task, model, names, tmp_path):
    with pytest.raises(ValueError) as error:
        kbert.save_model(model(tiny_encoder()), tmp_path, kbert.BertTokenizer(TINY_VOCAB), task)
    for name in names:
        assert name in str(error.value)
    assert not list(tmp_path.iterdir())


def test_the_task_settings_must_fit_the_model(tmp_path):
    tokenizer = kbert.BertTokenizer(TINY_VOCAB)
    with pytest.raises(ValueError, match="3 outputs"):  # three classes, two label names
        kbert.save_model(kbert.BertClassifier(tiny_encoder(), 3), tmp_path, tokenizer,
                         kbert.ClassificationTask(labels=["neg", "pos"]))
    with pytest.raises(ValueError, match="2 outputs"):  # no label names at all
        kbert.save_model(kbert.BertTokenClassifier(tiny_encoder(), 2), tmp_path, tokenizer, kbert.TaggingTask())


def test_a_task_that_load_model_could_not_rebuild_is_refused(tmp_path):
    """A subclass of a registered task is not the class task.json's name finds: it would load as another."""

    @dataclasses.dataclass
    class SentimentTask(kbert.ClassificationTask):
        pass

    with pytest.raises(ValueError, match="SentimentTask .*'classify'.* not the registered"):
        kbert.save_model(kbert.BertClassifier(tiny_encoder(), 2), tmp_path, kbert.BertTokenizer(TINY_VOCAB),
                         SentimentTask(labels=["neg", "pos"]))


def test_saved_model_has_weights_but_no_optimizer_state(tmp_path):
    encoder = tiny_encoder()
    model = kbert.BertClassifier(encoder, 2)
    model.compile()
    ids = np.array([[2, 5, 6, 7, 3], [2, 10, 11, 3, 0]], np.int32)
    x = {"token_ids": ids, "segment_ids": np.zeros_like(ids), "padding_mask": ids != 0}
    model.train_on_batch(x, np.array([0, 1], np.int32))
    optimizer = model.optimizer

    kbert.save_model(model, tmp_path, kbert.BertTokenizer(TINY_VOCAB), kbert.ClassificationTask(labels=["neg", "pos"]),
                     sequence_length=8)

    assert sorted(p.name for p in tmp_path.glob("model*")) == ["model.keras"]  # no partial file left
    with zipfile.ZipFile(tmp_path / "model.keras") as archive, archive.open("model.weights.h5") as weights:
        groups: list[str] = []
        h5py.File(weights, "r").visit(groups.append)
    assert not any(g.startswith("optimizer") for g in groups)
    assert any(g.startswith("layers") for g in groups)
    # The model in memory keeps its optimizer (training can go on); the reload gives the same outputs.
    assert model.optimizer is optimizer and int(optimizer.iterations) == 1
    restored = kbert.load_model(tmp_path)
    np.testing.assert_allclose(restored(x, training=False), model(x, training=False), atol=1e-6)
    model.train_on_batch(x, np.array([0, 1], np.int32))
    assert int(optimizer.iterations) == 2


@pytest.mark.slow
def test_a_model_directory_written_before_the_heads_moved_loads_in_a_new_process(tmp_path):
    """model.keras files of earlier releases name the head's old module (kbert.models.bert_classifier);
    Keras finds the class by its registered name, which `load_model` registers by importing the task named
    in task.json before it reads the file. A fresh process has imported nothing else."""
    encoder = tiny_encoder()
    kbert.save_model(kbert.BertClassifier(encoder, 2), tmp_path, kbert.BertTokenizer(TINY_VOCAB),
                     kbert.ClassificationTask(labels=["neg", "pos"]), sequence_length=8)
    path = tmp_path / "model.keras"
    with zipfile.ZipFile(path) as archive:
        entries = {name: archive.read(name) for name in archive.namelist()}
    config = json.loads(entries["config.json"])
    assert (config["module"], config["registered_name"]) == ("kbert.tasks.classification_model", "kbert>BertClassifier")
    config["module"] = "kbert.models.bert_classifier"
    entries["config.json"] = json.dumps(config).encode()
    with zipfile.ZipFile(path, "w") as archive:
        for name, data in entries.items():
            archive.writestr(name, data)

    code = "import sys, kbert; m = kbert.load_model(sys.argv[1]); print(type(m).__module__, m.output.shape)"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, cwd=ROOT,
                          env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip().splitlines()[-1] == "kbert.tasks.classification_model (None, 2)"
