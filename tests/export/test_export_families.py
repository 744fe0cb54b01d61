"""ALBERT's and RoBERTa's encoders export as BERT's do: strings in, the same outputs from the SavedModel and from
TFLite (RoBERTa's positions come from a cumulative sum over the ids; ALBERT runs its shared blocks again)."""

import pathlib
import sys

import numpy as np
import pytest
import tensorflow as tf

import kbert
from conftest import TINY_VOCAB
from kbert.export import ExportSource, export
from kbert.export import tflite as tflite_lib
from kbert.tasks import EncoderTask

sys.path.insert(0, str(pathlib.Path(__file__).parent))  # importlib mode: the helper beside us
import export_cases as cases  # noqa: E402

SIZES = dict(vocab_size=len(TINY_VOCAB), hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
             intermediate_size=32, max_position_embeddings=40, hidden_dropout_prob=0.0,
             attention_probs_dropout_prob=0.0)
ENCODERS = {
    "albert": lambda: kbert.AlbertEncoder(**SIZES, embedding_size=8, num_hidden_groups=1, inner_group_num=2),
    # BERT's WordPiece vocabulary pads with id 0.
    "roberta": lambda: kbert.RobertaEncoder(**SIZES, pad_token_id=0),
}


@pytest.mark.slow  # 30-50 s each: a SavedModel and a TFLite conversion
@pytest.mark.parametrize("family", ENCODERS)
def test_encoder_export_answers_as_the_model(tmp_path, family):
    source = ExportSource(ENCODERS[family](), kbert.BertTokenizer(TINY_VOCAB), EncoderTask(), cases.SEQ)
    path = export(source, tmp_path / "1", tflite=True)
    texts = cases.inputs_of("encoder")
    expected = cases.reference(source, texts)
    saved = tf.saved_model.load(str(path)).signatures["serving_default"](text=tf.constant(texts["text"]))
    got = tflite_lib.run(tflite_lib.interpreter(path / "model.tflite"), texts)
    for name, value in expected.items():
        np.testing.assert_allclose(saved[name].numpy(), value, atol=1e-5, rtol=0)
        np.testing.assert_allclose(got[name], value, atol=1e-4, rtol=0)
