"""`kbert finetune TASK --init DIR`, `kbert export` (SavedModel and --tflite) and `kbert predict` for DistilBERT: a
tiny random HF `DistilBertModel` with its WordPiece files, fine-tuned end to end for each task kind; the exports
answer as the Keras model does and pack as `DistilBertTokenizerFast` does."""

from __future__ import annotations

import json

import numpy as np
import pytest
import tensorflow as tf

import kbert
from kbert.cli.main import main
from kbert.export.model_precision import with_precision
from kbert.tasks.qa_features import build_qa_features
from tests.conftest import TINY_VOCAB
from tests.export.test_family_tasks import (TEXTS, assert_serving_answers_as_evaluation,
                                            assert_tag_export_equals_evaluation, exported_signature, finetune,
                                            write_squad)
from tests.family_checkpoints import distilbert_dir
from tests.training.conftest import keyword_rows

transformers = pytest.importorskip("transformers")


@pytest.fixture(scope="module")
def distilbert_init(tmp_path_factory):
    return distilbert_dir(tmp_path_factory.mktemp("distilbert") / "init", TINY_VOCAB)


@pytest.mark.slow  # fine-tuning, a SavedModel and its TFLite conversion: about 40 s
def test_distilbert_classify_finetune_export_tflite_predict(tmp_path, distilbert_init, capsys):
    pytest.importorskip("ai_edge_litert")
    from kbert.export.tflite import interpreter, run

    out = finetune(tmp_path, distilbert_init, "classify", ["text", "label"], keyword_rows(32, 1))
    model = kbert.load_model(out)
    assert isinstance(model.encoder, kbert.DistilBertEncoder) and isinstance(model.tokenizer, kbert.BertTokenizer)
    init = kbert.load_pretrained(distilbert_init)
    # Fine-tuning trained the encoder, not the head alone.
    assert not np.allclose(init.transformer_layers[0]._feedforward_output_dense.kernel.numpy(),
                           model.encoder.transformer_layers[0]._feedforward_output_dense.kernel.numpy())
    export = tmp_path / "export" / "1"
    assert main(["export", str(out), "--out", str(export)]) == 0
    loaded = tf.saved_model.load(str(export))
    # Packing as transformers' DistilBERT tokenizer, one text and a pair (its ids carry no segment ids).
    hf = transformers.DistilBertTokenizerFast.from_pretrained(str(distilbert_init))
    packed = loaded.signatures["preprocess_pair"](text=tf.constant(TEXTS), text_pair=tf.constant(TEXTS[::-1]))
    reference = hf(TEXTS, TEXTS[::-1], padding="max_length", max_length=packed["token_ids"].shape[1])
    np.testing.assert_array_equal(packed["token_ids"].numpy(), reference["input_ids"])
    np.testing.assert_array_equal(packed["padding_mask"].numpy(), reference["attention_mask"])
    got = loaded.signatures["serving_default"](text=tf.constant(TEXTS))["probabilities"].numpy()
    float32 = with_precision(model, "float32")  # as exported (training here may pick mixed bfloat16)
    want = tf.nn.softmax(float32(model.preprocessor(TEXTS), training=False)).numpy()
    np.testing.assert_allclose(got, want, atol=1e-5)
    # TFLite: WordPiece in the graph, the same probabilities from texts.
    lite_dir = tmp_path / "export" / "2"
    assert main(["export", str(out), "--out", str(lite_dir), "--tflite"]) == 0
    lite = run(interpreter(lite_dir / "model.tflite"), {"text": TEXTS})
    np.testing.assert_allclose(lite["probabilities"], want, atol=1e-5)
    capsys.readouterr()
    assert main(["predict", str(lite_dir / "model.tflite"), *TEXTS]) == 0
    printed = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith("{")]
    np.testing.assert_allclose([p["probabilities"] for p in printed], want, atol=1e-5)


@pytest.mark.slow  # fine-tuning and a SavedModel: about 30 s
def test_distilbert_tag_export_words_equal_evaluation(tmp_path, distilbert_init):
    model = assert_tag_export_equals_evaluation(tmp_path, distilbert_init)
    assert isinstance(model.encoder, kbert.DistilBertEncoder)


@pytest.mark.slow  # fine-tuning and a SavedModel: about 30 s
def test_distilbert_qa_export_answers_equal_evaluation(tmp_path, distilbert_init):
    squad = tmp_path / "train.json"
    examples = write_squad(squad, 3, ["good cat", "bad dog"])
    out = finetune(tmp_path, distilbert_init, "qa", [], None, str(squad), "--doc-stride", "8",
                   "--max-query-length", "8")
    model, serving = exported_signature(tmp_path, out, "span_logits")
    examples = examples[:8]
    features = build_qa_features(examples, model.tokenizer, 32, max_query_length=8)
    assert len(features) == len(examples)  # one window each, as the serving graph packs
    assert_serving_answers_as_evaluation(model, serving, examples, features)
