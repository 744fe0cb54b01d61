"""TFLiteSentencePieceTokenizer, in TensorFlow and converted to TFLite and run by LiteRT, against
SentencePieceTokenizer's ids (themselves HF AlbertTokenizer's, tests/text/test_sentencepiece_fuzz.py) and HF's."""

import random

import numpy as np
import pytest
import tensorflow as tf
from albert_reference import OTHER_SCRIPTS, hf_encode
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.text.test_sentencepiece_fuzz import MARKS, SETTINGS, SPACES, WORDS, text
from tests.text.test_sentencepiece_tokenizer import EDGE_CASES
from tests.text.test_tflite_bert_tokenizer import litert

from kbert.text import SentencePieceTokenizer, TFLiteSentencePieceTokenizer
from kbert.text.sentencepiece_vocabulary import compile_charsmap
from kbert.text.sentencepiece_model import charsmap_characters

INVALID_UTF8 = [b"caf\xc3 \xff\xfebad\x80 ok", b"\xc3\x28", b"\xed\xa0\x80x", b"a\xf0\x9f\x98", b"\xff``a''\xc3"]


@pytest.fixture(scope="module")
def lite_tok(albert_tok):
    return TFLiteSentencePieceTokenizer.from_tokenizer(albert_tok)


@pytest.fixture(scope="module")
def lite_run(lite_tok):
    """The tokenizer converted to TFLite and run by LiteRT: texts -> ids per text."""
    run = litert(lambda t: {"ids": lite_tok.tokenize(t).to_tensor(-1), "length": lite_tok.tokenize(t).row_lengths()})

    def ids(texts: list) -> list[list[int]]:
        out = run(text=np.array(texts, dtype=object))
        return [row[:n].tolist() for row, n in zip(out["ids"], out["length"])]

    return ids


def mixed_texts(lines: list[str], count: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    alphabet = WORDS + SPACES + MARKS + OTHER_SCRIPTS + lines[:200]
    return ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 12))) for _ in range(count)]


def test_litert_ids_equal_the_graph_tokenizer_and_hf(albert_tok, hf_albert, lite_tok, lite_run,
                                                     albert_held_out_lines):
    assert isinstance(lite_tok, TFLiteSentencePieceTokenizer) and lite_tok.in_tflite and not albert_tok.in_tflite
    texts = (albert_held_out_lines[:400] + EDGE_CASES + OTHER_SCRIPTS + mixed_texts(albert_held_out_lines, 300, 0)
             + ["", " ", "\u3000", "a\u00a0b\u3000c", "``", "'''", "\x00", "x\x00y", "  Leading and  trailing  ",
                " ".join(albert_held_out_lines[:300])])
    want = albert_tok(tf.constant(texts)).to_list()
    assert want == hf_encode(hf_albert, texts)["input_ids"]
    assert lite_run(texts) == want
    assert lite_tok(tf.constant(texts)).to_list() == want
    # One string in, one row out, as the graph tokenizer.
    assert lite_tok("A ``quoted'' Café").numpy().tolist() == albert_tok("A ``quoted'' Café").numpy().tolist()


def test_huge_strings(albert_tok, lite_run, albert_held_out_lines):
    texts = [" ".join(albert_held_out_lines), "a" * 20_000, "\u0627" * 50_000]
    assert lite_run(texts) == albert_tok(tf.constant(texts)).to_list()


def test_invalid_utf8_is_an_unknown_piece(albert_tok, lite_tok, lite_run):
    """The known divergence: LiteRT's op reads an invalid UTF-8 sequence as an unknown character (`<unk>`);
    the graph tokenizer reads it as U+FFFD, which ALBERT's character map makes a space."""
    assert lite_run(INVALID_UTF8) == lite_tok(tf.constant(INVALID_UTF8)).to_list()
    x, (broken,) = albert_tok(["x"]).to_list()[0], lite_run([b"x\xffy"])
    assert broken[:len(x)] == x and broken[len(x)] == albert_tok.unk_token_id
    assert albert_tok(tf.constant([b"x\xffy"])).to_list() == albert_tok(["x y"]).to_list()


@settings(max_examples=30, **SETTINGS)
@given(texts=st.lists(text, min_size=1, max_size=16))
def test_random_text_gives_the_graph_tokenizers_ids(albert_tok, lite_tok, texts):
    assert lite_tok(tf.constant(texts)).to_list() == albert_tok(tf.constant(texts)).to_list()


def test_cased_and_accented_settings(albert_dir, albert_held_out_lines):
    texts = EDGE_CASES + OTHER_SCRIPTS + mixed_texts(albert_held_out_lines, 100, 1)
    for lowercase, strip_accents in ((False, True), (True, False)):
        exact = SentencePieceTokenizer(albert_dir, lowercase=lowercase, strip_accents=strip_accents)
        lite = TFLiteSentencePieceTokenizer.from_tokenizer(exact)
        assert (lite.lowercase, lite.strip_accents) == (lowercase, strip_accents)
        assert lite(tf.constant(texts)).to_list() == exact(tf.constant(texts)).to_list()


def test_no_offsets_and_a_clear_refusal(lite_tok):
    with pytest.raises(ValueError, match="offsets"):
        lite_tok.tokenize_with_offsets(tf.constant(["a b"]))


def test_compile_charsmap_rules():
    charsmap = compile_charsmap({"É": "e", "\x01": "", "``": '"'})
    assert charsmap_characters(charsmap) == {0xC9: "e", 0x01: ""}
    with pytest.raises(ValueError, match="NUL"):
        compile_charsmap({"a\x00": "b"})
