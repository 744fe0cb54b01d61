"""An export's TFLite file (LiteRT, no Flex delegate) answers as its SavedModel on non-ASCII text.

A tiny encoder over the real all-MiniLM-L6-v2 vocabulary, so Chinese, Japanese, Korean, accented Latin
and emoji text reach the model as BERT's ids; its weights are drawn wide (initializer range 0.5), so that
probabilities and labels move with the ids.
"""

import keras
import numpy as np
import pytest
import tensorflow as tf

import kbert
from kbert.export import ExportSource, export
from kbert.export import tflite as tflite_lib
from kbert.tasks import get_task
from kbert.text import load_tokenizer

TEXTS = [
    "酒店位置很好，服务也不错！房间干净，早餐一般。",  # Chinese, full-width punctuation
    "价格：三百元？太贵了。。。",
    "このホテルはとても綺麗でした。また泊まりたいです！",  # Japanese
    "ｶﾀｶﾅとＡＢＣ１２３、全角の文字。",
    "서비스가 정말 좋았어요. 다시 오고 싶습니다!",  # Korean
    "Café naïve, résumé à Ångström — Øresund Łódź; Straße ﬁne ǅ İstanbul ΣΟΦΙΑ",  # accented Latin
    "Great stay 😀👍🏽🎉 would come back ❤️",  # emoji
    "混合 mixed 日本語 한국어 text, with ＵＲＬ https://例子.中国/路径?查询=1 and\u200bzero\u00a0width",
    "",
]
TAG_LABELS = ["O", "B-LOC", "I-LOC"]


def tiny_encoder(vocab_size: int) -> kbert.BertEncoder:
    return kbert.BertEncoder(vocab_size=vocab_size, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                             intermediate_size=32, max_position_embeddings=64, initializer_range=0.5)


def export_task(minilm, root, task: str, labels: list[str]):
    """A tiny `task` model over the real vocabulary, exported with its TFLite file; returns the directory."""
    keras.utils.set_random_seed(13)
    tok = load_tokenizer(minilm)
    encoder = tiny_encoder(tok.vocabulary_size())
    model = (kbert.BertClassifier(encoder, len(labels), dropout=0.0) if task == "classify"
             else kbert.BertTokenClassifier(encoder, len(labels), dropout=0.0))
    source = ExportSource(model=model, tokenizer=tok, task=get_task(task, labels=labels), sequence_length=48)
    return export(source, root / task / "1", tflite=True)


@pytest.fixture(scope="module")
def classifier_export(minilm, tmp_path_factory):
    return export_task(minilm, tmp_path_factory.mktemp("tflite_exact"), "classify", ["neg", "neu", "pos"])


def answers(path, signature: str) -> tuple[dict, dict]:
    """(SavedModel, TFLite) outputs of one signature on `TEXTS`, as numpy arrays."""
    saved = tf.saved_model.load(str(path)).signatures[signature](text=tf.constant(TEXTS))
    lite = tflite_lib.run(tflite_lib.interpreter(path / "model.tflite"), {"text": TEXTS}, signature)
    return {k: v.numpy() for k, v in saved.items()}, lite


def test_classifier_tflite_equals_savedmodel(classifier_export):
    saved, lite = answers(classifier_export, "serving_default")
    np.testing.assert_array_equal(lite["label_id"], saved["label_id"])
    assert [x.decode() if isinstance(x, bytes) else x for x in lite["label"]] == \
        [x.decode() for x in saved["label"]]
    np.testing.assert_allclose(lite["probabilities"], saved["probabilities"], atol=1e-4, rtol=0)
    assert len(set(saved["label_id"].tolist())) > 1  # the texts do not all get one answer


def test_tflite_ids_equal_savedmodel_and_bert_tokenizer(classifier_export, minilm):
    saved, lite = answers(classifier_export, "preprocess")
    for key in ("token_ids", "segment_ids", "padding_mask"):
        np.testing.assert_array_equal(lite[key], saved[key])
    ids = load_tokenizer(minilm)(tf.constant(TEXTS))
    for row, want in zip(lite["token_ids"], ids.to_list()):
        assert row[1:1 + len(want)].tolist() == want[:46]
    assert load_tokenizer(minilm).token_to_id("，") in lite["token_ids"]


@pytest.mark.slow
def test_tagger_tflite_word_offsets_equal_savedmodel(minilm, tmp_path):
    """Offsets are characters in both runtimes, so words and entities line up on CJK and emoji too."""
    saved, lite = answers(export_task(minilm, tmp_path, "tag", TAG_LABELS), "serving_default")
    for key in ("num_words", "word_start", "word_end", "word_label_id", "num_entities", "entity_start",
                "entity_end"):
        np.testing.assert_array_equal(lite[key], saved[key], err_msg=key)
    assert saved["num_words"].max() > 10
