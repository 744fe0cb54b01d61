"""`import kbert`: cheap, free of side effects, and every public name still resolves (PEP 562)."""

from __future__ import annotations

import importlib
import os
import pathlib
import subprocess
import sys

import pytest

import kbert

ROOT = pathlib.Path(__file__).resolve().parents[1]
LAZY_PACKAGES = ["kbert", "kbert.tasks", "kbert.training", "kbert.pretraining_data", "kbert.text", "kbert.export"]


def run_python(code: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "TF_ENABLE_ONEDNN_OPTS"}
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, env=env,
                          timeout=300)


def test_import_kbert_loads_no_framework_and_sets_nothing():
    proc = run_python(
        "import os, sys\n"
        "before = dict(os.environ)\n"
        "import kbert, kbert.tasks, kbert.training, kbert.pretraining_data, kbert.text, kbert.export\n"
        "from kbert.training.finetune_config import FinetuneConfig\n"
        "import kbert.training.pretrain\n"
        "from kbert.training.pretrain_config import PretrainConfig\n"
        "from kbert.pretraining_data.create_config import CreatePretrainingDataConfig\n"
        "from kbert.tasks.registry import COMMANDS\n"
        "import kbert.embeddings, kbert.embeddings.embed_config, kbert.embeddings.index_config\n"
        "assert dict(os.environ) == before, set(os.environ.items()) ^ set(before.items())\n"
        "print(sorted(m for m in ('tensorflow', 'keras', 'keras_hub', 'tensorflow_text', 'torch', 'numpy')"
        " if m in sys.modules))\n")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == "[]"


def test_public_names_resolve_on_first_use():
    proc = run_python(
        "import sys, kbert\n"
        "encoder = kbert.BertEncoder(vocab_size=20, hidden_size=8, num_hidden_layers=1, num_attention_heads=2,"
        " intermediate_size=16)\n"
        "print(type(encoder).__module__, 'tensorflow' in sys.modules, kbert.pretrained.__name__)\n")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.split() == ["kbert.models.bert_encoder", "True", "kbert.pretrained"]


@pytest.mark.parametrize("name", LAZY_PACKAGES)
def test_every_public_name_resolves_and_is_listed(name):
    package = importlib.import_module(name)
    assert len(set(package.__all__)) == len(package.__all__)
    for public in package.__all__:
        assert getattr(package, public) is not None, public
        assert public in dir(package), public


def test_the_public_api_is_unchanged():
    assert sorted(kbert.__all__) == sorted([
        "BertClassifier", "BertConfig", "BertEmbeddings", "BertEncoder", "BertPreprocessor", "BertPretrainer",
        "BertQuestionAnswerer", "BertTokenClassifier", "BertTokenizer", "ByteLevelBpeTokenizer", "CheckpointError",
        "PRESETS", "SentencePieceTokenizer", "TFLiteBertTokenizer",
        "TFLiteSentencePieceTokenizer", "__version__", "from_keras_hub", "learn_vocabulary",
        "load_embeddings", "load_model",
        "load_pretrained", "load_pretrainer", "load_tokenizer", "pretrained", "save_model", "save_pretrained",
        "to_keras_hub",
        # the BERT family's other encoders
        "AlbertConfig", "AlbertEncoder", "RobertaConfig", "RobertaEncoder", "DistilBertConfig", "DistilBertEncoder",
        # sentence embeddings
        "BertSentenceEmbedder", "EmbeddingTask", "load_sentence_encoder",
        # the Task API
        "Task", "ClassificationTask", "RegressionTask", "TaggingTask", "QuestionAnsweringTask", "EncoderTask", "get_task",
        "FinetuneConfig", "finetune", "evaluate_model", "PretrainConfig", "pretrain",
        # distillation
        "DistillConfig", "Distiller", "build_student", "distill"])
    from kbert.models.bert_encoder import BertEncoder

    assert kbert.BertEncoder is BertEncoder


def test_unknown_names_and_submodules():
    with pytest.raises(AttributeError, match="no attribute 'NoSuchThing'"):
        kbert.NoSuchThing  # noqa: B018
    # A submodule is an attribute, as when `import kbert` imported everything.
    assert kbert.optim.create_optimizer is importlib.import_module("kbert.optim").create_optimizer
    from kbert.text import normalization

    assert normalization.__name__ == "kbert.text.normalization"


def test_the_task_api_imports_from_kbert():
    from kbert import ClassificationTask, FinetuneConfig, QuestionAnsweringTask, TaggingTask, finetune
    from kbert.tasks.base import Task
    from kbert.training.finetune import finetune as the_loop

    assert finetune is the_loop
    assert all(issubclass(task, Task) for task in (ClassificationTask, TaggingTask, QuestionAnsweringTask))
    assert FinetuneConfig(train="t.tsv", out="o").epochs == 3
