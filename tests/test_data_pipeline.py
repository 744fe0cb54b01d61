"""The tf.data settings every task pipeline gets: no autotuning thread, no static rewrites, and the padding
multiple by host."""

import tensorflow as tf

import kbert
from kbert import data_pipeline
from kbert.tasks import ClassificationTask, QuestionAnsweringTask, TaggingTask

VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat", "sat", "on", "mat", "?"]


def test_default_pad_multiple_follows_the_devices(monkeypatch):
    cpu = tf.config.PhysicalDevice("/physical_device:CPU:0", "CPU")
    gpu = tf.config.PhysicalDevice("/physical_device:GPU:0", "GPU")
    monkeypatch.setattr(tf.config, "list_physical_devices", lambda *a: [cpu])
    assert data_pipeline.default_pad_multiple() == 1
    monkeypatch.setattr(tf.config, "list_physical_devices", lambda *a: [cpu, gpu])
    assert data_pipeline.default_pad_multiple() == data_pipeline.ACCELERATOR_PAD_MULTIPLE


def test_task_pipelines_run_as_written():
    tokenizer = kbert.BertTokenizer(VOCAB)
    pre = kbert.BertPreprocessor(tokenizer, sequence_length=16, padding="dynamic")
    sentences = ClassificationTask(labels=["0", "1"]).dataset(
        [{"text": "the cat sat", "text_pair": None, "label": "1"}], pre, 2, training=True)
    tags = TaggingTask(labels=["O", "B"]).dataset([{"words": ["the", "cat"], "tags": ["O", "B"]}], pre, 2,
                                                  training=True)
    rounded = data_pipeline.default_pad_multiple() > 1
    for data, longest in ((sentences, 5), (tags, 4)):  # [CLS] the cat (sat) [SEP]
        assert data.dataset.options().autotune.enabled is False
        assert data.dataset.options().experimental_optimization.apply_default_optimizations is False
        (x, _), = list(data.dataset)
        assert x["token_ids"].shape[1] == (16 if rounded else longest)
    spans = QuestionAnsweringTask().dataset(
        [{"question": "the cat ?", "context": "the cat sat on the mat", "answers": [{"text": "mat",
                                                                                       "answer_start": 19}]}],
        pre, 2, training=True)
    assert spans.dataset.options().autotune.enabled is False
    assert spans.dataset.options().experimental_optimization.apply_default_optimizations is False
