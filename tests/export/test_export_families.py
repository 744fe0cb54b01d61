"""ALBERT's and RoBERTa's encoders export as BERT's do: strings in, the same outputs from the SavedModel and from
TFLite (RoBERTa's positions come from a cumulative sum over the ids; ALBERT runs its shared blocks again); and
ALBERT's SentencePiece tokenizer, whose model is a resource of the graph, travels in a tag or QA export."""

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


# A hand-written SentencePiece model (ids 5 on): "the ``cats'' sat" is "▁the", '▁"', "c", "a", "t", "s", '"', "▁sat".
PIECES = [("▁", -3), ("▁the", -1), ("▁cat", -1), ("s", -2), ("▁sat", -1), ('▁"', -1), ('"', -2)] + [
    (c, -4) for c in "aceht"]


def test_tokenizer_resources_travel_in_a_saved_model(tmp_path):
    """`tokenizer_resources` finds the SentencePiece model resource (held in tensorflow-text's tokenizer); a
    module that tracks it saves and reloads a function of `tokenize_with_offsets` (untracked, saving fails)."""
    from albert_reference import tiny_model

    from kbert.export.serving_module import tokenizer_resources

    tok = kbert.SentencePieceTokenizer(tiny_model(PIECES))
    assert tokenizer_resources(tok) == [tok._sentencepiece]
    assert tokenizer_resources(kbert.BertTokenizer(TINY_VOCAB)) == []
    module = tf.Module()
    module.resources = tokenizer_resources(tok)
    module.f = tf.function(lambda x: tok.tokenize_with_offsets(x)[1].to_tensor(-1),
                           input_signature=[tf.TensorSpec([None], tf.string)])
    tf.saved_model.save(module, str(tmp_path / "sm"))
    starts = tf.saved_model.load(str(tmp_path / "sm")).f(tf.constant(["the ``cats''  sat"])).numpy().tolist()
    assert starts == [[0, 4, 6, 7, 8, 9, 10, 14]]


@pytest.mark.slow  # a SavedModel each: 10-20 s
@pytest.mark.parametrize("task", ["tag", "qa"])
def test_sentencepiece_offsets_export_reloads(tmp_path, task):
    """Tagging and QA read character offsets with tensorflow-text's `SentencepieceTokenizer`, whose model is a
    resource of the graph: the export tracks it (untracked, `tf.saved_model.save` refused the signatures), and
    the reloaded signatures answer as the module does."""
    from albert_reference import tiny_model

    from kbert.export.serving_module import ServingModule
    from kbert.tasks import QuestionAnsweringTask, TaggingTask

    tok = kbert.SentencePieceTokenizer(tiny_model(PIECES))
    encoder = kbert.AlbertEncoder(**dict(SIZES, vocab_size=tok.vocabulary_size()), embedding_size=8)
    if task == "tag":
        source = ExportSource(kbert.BertTokenClassifier(encoder, 3), tok, TaggingTask(labels=["O", "B-X", "I-X"]),
                              cases.SEQ)
        inputs = {"text": tf.constant(["the ``cats''  sat", "", "\u00c9 cat"])}
    else:
        source = ExportSource(kbert.BertQuestionAnswerer(encoder), tok, QuestionAnsweringTask(), cases.SEQ)
        inputs = {"question": tf.constant(["the cat", "sat"]), "context": tf.constant(["``cats''  sat", "a"])}
    path = export(source, tmp_path / "1")
    want = ServingModule(source.model, tok, source.task, cases.SEQ).signatures()["serving_default"](**inputs)
    got = tf.saved_model.load(str(path)).signatures["serving_default"](**inputs)
    assert sorted(got) == sorted(want)
    for name, value in want.items():
        if value.dtype.is_floating:
            np.testing.assert_allclose(got[name].numpy(), value.numpy(), atol=1e-5)
        else:
            np.testing.assert_array_equal(got[name].numpy(), value.numpy())
    if task == "tag":
        words = got["word_text"][0, :int(got["num_words"][0])].numpy()
        assert [w.decode() for w in words] == ["the", "``cats''", "sat"]
