"""BertPreprocessor: exact packing on the tiny vocabulary, trimmers, tf.data, offsets and TFLite."""

import itertools

import numpy as np
import pytest
import tensorflow as tf
import tensorflow_text as tf_text

from kbert.text import BertPreprocessor, BertTokenizer, TFLiteBertTokenizer
from kbert.text.bert_preprocessor import trim_lengths


@pytest.fixture
def tok(tiny_vocab_file):
    return BertTokenizer(tiny_vocab_file)


def test_pair_packing_exact(tok):
    pre = BertPreprocessor(tok, sequence_length=10)
    out = pre((["the cat sat on the mat", "dogs"], ["a good dog ran!", "unaffable"]))
    # Row 0: 6 + 5 tokens for a budget of 7 -> round robin keeps 4 + 3.
    assert out["token_ids"].numpy().tolist() == [
        [2, 5, 6, 7, 8, 3, 14, 15, 10, 3],
        [2, 10, 12, 3, 21, 22, 23, 3, 0, 0],
    ]
    assert out["segment_ids"].numpy().tolist() == [
        [0, 0, 0, 0, 0, 0, 1, 1, 1, 1],
        [0, 0, 0, 0, 1, 1, 1, 1, 0, 0],
    ]
    assert out["padding_mask"].dtype == tf.bool
    assert out["padding_mask"].numpy().astype(int).tolist() == [[1] * 10, [1] * 8 + [0] * 2]
    assert out["token_ids"].dtype == tf.int32 and out["segment_ids"].dtype == tf.int32


def test_single_scalar_list_and_waterfall(tok):
    pre = BertPreprocessor(tok, sequence_length=6, truncate="waterfall")
    assert pre("the cat sat on the mat")["token_ids"].numpy().tolist() == [2, 5, 6, 7, 8, 3]
    pair = pre(("the cat sat", "a dog"))  # tuple of two strings: one pair
    assert pair["token_ids"].numpy().tolist() == [2, 5, 6, 7, 3, 3]
    batch = pre(["the cat", "a dog"])  # list of strings: a batch
    assert batch["token_ids"].shape == (2, 6)


def test_dynamic_padding(tok):
    pre = BertPreprocessor(tok, sequence_length=16, padding="dynamic")
    out = pre(["the cat", "a"])
    assert out["token_ids"].numpy().tolist() == [[2, 5, 6, 3], [2, 14, 3, 0]]


@pytest.mark.parametrize("truncate,trimmer", [("round_robin", tf_text.RoundRobinTrimmer),
                                              ("waterfall", tf_text.WaterfallTrimmer)])
def test_trimming_matches_tensorflow_text(truncate, trimmer):
    pairs = list(itertools.product(range(0, 9), range(0, 9)))
    a = tf.constant([p[0] for p in pairs], tf.int32)
    b = tf.constant([p[1] for p in pairs], tf.int32)
    for budget in (1, 4, 7, 20):
        keep = trim_lengths([a, b], budget, truncate)
        seg_a = tf.ragged.range(a)
        seg_b = tf.ragged.range(b)
        ref = trimmer(max_seq_length=budget).trim([seg_a, seg_b])
        assert keep[0].numpy().tolist() == ref[0].row_lengths().numpy().tolist()
        assert keep[1].numpy().tolist() == ref[1].row_lengths().numpy().tolist()


def test_tf_data_batched_and_unbatched_agree(tok):
    pre = BertPreprocessor(tok, sequence_length=8)
    a = ["the cat sat on the mat", "dogs", "", "unaffable good"]
    b = ["a good dog ran!", "unaffable", "the", ""]
    ds = tf.data.Dataset.from_tensor_slices((a, b))
    unbatched = next(ds.map(lambda x, y: pre((x, y))).batch(4).as_numpy_iterator())
    batched = next(ds.batch(4).map(lambda x, y: pre((x, y))).as_numpy_iterator())
    direct = pre((a, b))
    for key in ("token_ids", "segment_ids", "padding_mask"):
        np.testing.assert_array_equal(unbatched[key], batched[key])
        np.testing.assert_array_equal(batched[key], direct[key].numpy())


def test_pack_and_offsets(tok):
    pre = BertPreprocessor(tok, sequence_length=9)
    ids = tf.ragged.constant([[5, 6], [10]], dtype=tf.int32)
    packed = pre.pack(ids)
    assert packed["token_ids"].numpy().tolist() == [[2, 5, 6, 3, 0, 0, 0, 0, 0], [2, 10, 3, 0, 0, 0, 0, 0, 0]]
    out = pre.call_with_offsets((["The cats"], ["a dog"]))
    assert out["token_ids"].numpy().tolist() == [[2, 5, 6, 12, 3, 14, 10, 3, 0]]
    assert out["start_offsets"].numpy().tolist() == [[0, 0, 4, 7, 0, 0, 2, 0, 0]]
    assert out["end_offsets"].numpy().tolist() == [[0, 3, 7, 8, 0, 1, 5, 0, 0]]
    assert out["word_ids"].numpy().tolist() == [[-1, 0, 1, 1, -1, 0, 1, -1, -1]]



def test_max_first_length_cuts_a_pairs_first_segment(tok):
    """As QA windows cut a question: the first segment keeps at most that many ids, the second gets the room."""
    pre = BertPreprocessor(tok, sequence_length=9, truncate="waterfall")
    question = tf.ragged.constant([[5, 6, 7, 8, 9], [10]], dtype=tf.int32)
    context = tf.ragged.constant([[14, 15, 10, 11], [6, 7]], dtype=tf.int32)
    assert pre.pack(question, context)["token_ids"].numpy().tolist() == [
        [2, 5, 6, 7, 8, 9, 3, 14, 3], [2, 10, 3, 6, 7, 3, 0, 0, 0]]
    cut = pre.pack(question, context, max_first_length=2)
    assert cut["token_ids"].numpy().tolist() == [[2, 5, 6, 3, 14, 15, 10, 11, 3], [2, 10, 3, 6, 7, 3, 0, 0, 0]]
    assert cut["segment_ids"].numpy().tolist() == [[0, 0, 0, 0, 1, 1, 1, 1, 1], [0, 0, 0, 1, 1, 1, 0, 0, 0]]
    with pytest.raises(ValueError, match="first segment of a pair"):
        pre.pack(question, max_first_length=2)
    with pytest.raises(ValueError, match="first segment of a pair"):
        pre.pack(question, context, max_first_length=-1)

def test_bad_arguments(tok):
    with pytest.raises(ValueError, match="truncate"):
        BertPreprocessor(tok, truncate="longest")
    with pytest.raises(ValueError, match="sequence_length"):
        BertPreprocessor(tok, sequence_length=2)
    with pytest.raises(ValueError, match="one or two"):
        BertPreprocessor(tok)((["a"], ["b"], ["c"]))


def test_config_round_trip(tok):
    pre = BertPreprocessor(tok, sequence_length=7, truncate="waterfall", padding="dynamic")
    clone = BertPreprocessor.from_config(pre.get_config())
    assert clone.sequence_length == 7 and clone.truncate == "waterfall" and clone.padding == "dynamic"
    np.testing.assert_array_equal(clone(["the cat"])["token_ids"], pre(["the cat"])["token_ids"])


def _convert(fn):
    converter = tf.lite.TFLiteConverter.from_concrete_functions([fn.get_concrete_function()], fn)
    return converter


def _run_litert(model, texts):
    litert = pytest.importorskip("ai_edge_litert.interpreter")
    it = litert.InterpreterWithCustomOps(
        model_content=model, custom_op_registerers=tf_text.tflite_registrar.SELECT_TFTEXT_OPS)
    inp = it.get_input_details()[0]
    it.resize_tensor_input(inp["index"], [len(texts)])
    it.allocate_tensors()
    it.set_tensor(inp["index"], np.array(texts))
    it.invoke()
    return {o["name"]: it.get_tensor(o["index"]) for o in it.get_output_details()}


@pytest.mark.slow
def test_tflite_exact_path_converts_with_flex_ops(tok):
    """The exact tokenizer converts with SELECT_TF_OPS; running it needs the Flex delegate (absent from
    the pip interpreters) built with tensorflow-text's NormalizeUTF8 kernel, the one non-core TF op."""
    pre = BertPreprocessor(tok, sequence_length=8)
    fn = tf.function(lambda x: pre(x)["token_ids"], input_signature=[tf.TensorSpec([None], tf.string)])
    converter = _convert(fn)
    converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS, tf.lite.OpsSet.SELECT_TF_OPS]
    converter.allow_custom_ops = True
    model = converter.convert()
    assert b"FlexNormalizeUTF8" in model and b"FlexStringSplitV2" in model and b"FastWordpiece" in model
    assert b"RaggedGather" not in model


@pytest.mark.slow
def test_tflite_tokenizer_path_runs_in_litert(tiny_vocab_file):
    tok = TFLiteBertTokenizer(tiny_vocab_file)
    pre = BertPreprocessor(tok, sequence_length=8)
    fn = tf.function(lambda x: pre(x)["token_ids"], input_signature=[tf.TensorSpec([None], tf.string)])
    converter = _convert(fn)
    converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS]
    converter.allow_custom_ops = True
    model = converter.convert()
    texts = ["The cats sat on the mat!", "unaffable dogs"]
    got = list(_run_litert(model, texts).values())[0]
    np.testing.assert_array_equal(got, fn(tf.constant(texts)).numpy())
    assert got.tolist()[1][:6] == [2, 21, 22, 23, 10, 12]
