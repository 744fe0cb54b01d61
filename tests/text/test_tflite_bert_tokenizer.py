"""TFLiteBertTokenizer, converted to TFLite and run in LiteRT, against BertTokenizer's ids and offsets."""

import json
import pathlib
import random

import numpy as np
import pytest
import tensorflow as tf
import tensorflow_text as tf_text

from kbert.text import BertPreprocessor, BertTokenizer, TFLiteBertTokenizer

CORPUS = json.loads((pathlib.Path(__file__).parent / "mixed_corpus.json").read_text())
# The characters the FastBertTokenizer normaliser folds differently from BERT, and other hard cases.
HARD = "，。！？：；（）「」ßﬁİΣσςǅ한국어日本語ｶﾞＡ①²½€…—\u00ad\u200b\u3000\ufeff😀👍🏽\U00020000"
SETTINGS = {"uncased": (True, None), "cased": (False, None), "lower_keep_accents": (True, False)}
# The everyday suite checks the two settings of released BERT checkpoints; the slow tier adds the third.
PARAMS = ["uncased", "cased", pytest.param("lower_keep_accents", marks=pytest.mark.slow)]


def litert(fn) -> callable:
    """`fn(text)` (strings in, a dict of tensors out) converted to TFLite and run by LiteRT."""
    interpreter = pytest.importorskip("ai_edge_litert.interpreter")
    module = tf.Module()
    module.fn = tf.function(fn, input_signature=[tf.TensorSpec([None], tf.string, name="text")])
    converter = tf.lite.TFLiteConverter.from_concrete_functions([module.fn.get_concrete_function()], module)
    # Built-ins and tensorflow-text's kernels only: a Flex op would fail the conversion here.
    converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS]
    converter.allow_custom_ops = True
    return interpreter.InterpreterWithCustomOps(
        model_content=converter.convert(), custom_op_registerers=tf_text.tflite_registrar.SELECT_TFTEXT_OPS,
    ).get_signature_runner()


class LiteRt:
    """A tokenizer's ids, character offsets and word ids, converted to TFLite and run by LiteRT."""

    def __init__(self, tokenizer: TFLiteBertTokenizer):
        def tokenize(text):
            ids, starts, ends = tokenizer.tokenize_with_offsets(text)
            _, words = tokenizer.tokenize_words(text)
            return {"ids": ids.to_tensor(-1), "starts": starts.to_tensor(), "ends": ends.to_tensor(),
                    "words": words.to_tensor(), "length": ids.row_lengths()}

        self._run = litert(tokenize)

    def __call__(self, texts: list) -> dict[str, list[list[int]]]:
        out = self._run(text=np.array(texts, dtype=object))
        return {k: [row[:n].tolist() for row, n in zip(out[k], out["length"])]
                for k in ("ids", "starts", "ends", "words")}

    def padded_ids(self, texts: list) -> np.ndarray:
        """The ids alone, a row a text, padded with -1 (no id): (texts, longest)."""
        return self._run(text=np.array(texts, dtype=object))["ids"]


def expected(tok: BertTokenizer, texts: list) -> dict[str, list[list[int]]]:
    ids, starts, ends = tok.tokenize_with_offsets(tf.constant(texts))
    _, words = tok.tokenize_words(tf.constant(texts))
    return {"ids": ids.to_list(), "starts": starts.to_list(), "ends": ends.to_list(), "words": words.to_list()}


@pytest.fixture(scope="module", params=PARAMS)
def pair(request, minilm):
    """(BertTokenizer, LiteRt of the TFLiteBertTokenizer) on the real vocabulary, per casing setting."""
    lowercase, strip_accents = SETTINGS[request.param]
    vocab = minilm / "vocab.txt"
    exact = BertTokenizer(vocab, lowercase=lowercase, strip_accents=strip_accents)
    return exact, LiteRt(TFLiteBertTokenizer(vocab, lowercase=lowercase, strip_accents=strip_accents))


def per_code_point_texts(code_points: list[int]) -> list[str]:
    """Each code point alone, between letters, after a space and doubled at a word's end."""
    return [t for c in map(chr, code_points) for t in (c, f"a{c}b {c} x{c}{c}")]


def differing_code_points(exact: BertTokenizer, lite: LiteRt, code_points: list[int]) -> list[str]:
    bad = []
    for i in range(0, len(code_points), 4096):
        chunk = code_points[i:i + 4096]
        texts = per_code_point_texts(chunk)
        # Rows padded with -1 to one width are equal exactly when the id lists are.
        want, got = exact(tf.constant(texts)).to_tensor(-1).numpy(), lite.padded_ids(texts)
        width = max(want.shape[1], got.shape[1])
        want, got = (np.pad(ids, [(0, 0), (0, width - ids.shape[1])], constant_values=-1) for ids in (want, got))
        same = (want == got).all(axis=1).reshape(len(chunk), 2).all(axis=1)
        bad += [hex(c) for c, ok in zip(chunk, same) if not ok]
    return bad


def test_mixed_corpus_ids_offsets_and_word_ids_equal_in_litert(pair):
    exact, lite = pair
    texts = CORPUS + [HARD, HARD.upper(), " ".join(HARD), ""]
    want, got = expected(exact, texts), lite(texts)
    for key in want:
        for text, a, b in zip(texts, want[key], got[key]):
            assert a == b, (key, text)
    assert any(len(row) > 5 for row in got["ids"])


def test_invalid_utf8_and_random_text_equal_in_litert(pair):
    exact, lite = pair
    rng = random.Random(13)
    stray = [0x41, 0x20, 0x80, 0xBF, 0xC2, 0xE0, 0xED, 0xF0, 0xF4, 0xFF, 0xA0, 0x9F, 0x90, 0xE4, 0xB8, 0xAD]
    texts = [bytes(rng.choice(stray) for _ in range(rng.randint(0, 12))) for _ in range(400)]
    ranges = [(0x20, 0x7E), (0xA0, 0x2FFF), (0x3000, 0x30FF), (0x4E00, 0x9FFF), (0xAC00, 0xD7A3),
              (0xFF00, 0xFFEF), (0x1F300, 0x1F64F), (0x20000, 0x2A6DF)]
    texts += ["".join(chr(rng.randint(*rng.choice(ranges))) for _ in range(rng.randint(0, 40))).encode()
              for _ in range(400)]
    assert lite(texts) == expected(exact, texts)


def test_every_code_point_of_the_bmp_equal_in_litert(pair):
    exact, lite = pair
    code_points = [c for c in range(0x10000) if not 0xD800 <= c < 0xE000]
    assert differing_code_points(exact, lite, code_points) == []


def test_sample_beyond_the_bmp_and_hard_characters_equal_in_litert(pair):
    exact, lite = pair
    assert differing_code_points(exact, lite, sorted({*range(0x10000, 0x110000, 997), *map(ord, HARD)})) == []


@pytest.mark.slow
def test_every_code_point_beyond_the_bmp_equal_in_litert(pair):
    exact, lite = pair
    assert differing_code_points(exact, lite, list(range(0x10000, 0x110000))) == []


def test_fast_bert_tokenizer_differs_where_this_one_does_not(minilm):
    """`tf_text.FastBertTokenizer` (the earlier TFLite route) folds full-width punctuation to ASCII."""
    exact = BertTokenizer(minilm / "vocab.txt")
    fast = tf_text.FastBertTokenizer(exact.get_vocabulary(), token_out_type=tf.int32,
                                     lower_case_nfd_strip_accents=True)
    texts = ["好，很好。", "ß"]
    assert fast.tokenize(texts).to_list() != exact(texts).to_list()
    assert TFLiteBertTokenizer(minilm / "vocab.txt")(texts).to_list() == exact(texts).to_list()
    assert exact(["，"]).to_list() == [[exact.token_to_id("，")]]


def test_tiny_vocabulary_call_shapes_and_config(tiny_vocab_file):
    tok = TFLiteBertTokenizer(tiny_vocab_file)
    exact = BertTokenizer(tiny_vocab_file)
    texts = ["The cats sat on the mat!", "unaffable dogs", "", "Ünaffable… dogs!"]
    assert tok(texts).to_list() == exact(texts).to_list() == [
        [5, 6, 12, 7, 8, 5, 9, 19], [21, 22, 23, 10, 12], [], [21, 22, 23, 1, 10, 12, 19]]
    assert tok("the cat").numpy().tolist() == [5, 6]
    assert tok(tf.constant([["the"], ["cat"]])).to_list() == [[5], [6]]
    clone = TFLiteBertTokenizer.from_config(tok.get_config())
    assert clone(texts).to_list() == tok(texts).to_list() and clone.lowercase is True
    assert TFLiteBertTokenizer.from_tokenizer(BertTokenizer(tiny_vocab_file, lowercase=False))(
        ["The cat"]).to_list() == [[1, 6]]


def test_packs_in_a_preprocessor_converted_to_litert(tiny_vocab_file):
    pre = BertPreprocessor(TFLiteBertTokenizer(tiny_vocab_file), sequence_length=8)
    run = litert(lambda text: {"token_ids": pre(text)["token_ids"]})
    texts = ["The cats sat on the mat!", "unaffable dogs，"]
    got = run(text=np.array(texts, dtype=object))["token_ids"]
    want = BertPreprocessor(BertTokenizer(tiny_vocab_file), sequence_length=8)(texts)["token_ids"]
    np.testing.assert_array_equal(got, want)
    assert got.tolist()[1][:6] == [2, 21, 22, 23, 10, 12]
