"""ByteLevelBpeTokenizer fuzzed against HF's RobertaTokenizer: random text of white space, punctuation,
contractions, numbers and every Unicode block; ids and offsets must be equal."""

import unicodedata

import pytest
import tensorflow as tf
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

SPACES = [" ", "  ", "\t", "\n", "\r\n", "\x0b", "\x0c", "\x85", "\u00a0", "\u1680", "\u2002", "\u2009", "\u200a",
          "\u2028", "\u2029", "\u202f", "\u205f", "\u3000", "\u200b", "\ufeff"]
CONTRACTIONS = ["'s", "'t", "'re", "'ve", "'m", "'ll", "'d", "'S", "'T", "'x", "''", "n't", "'"]
PIECES = ["the", "The", "Hello", "world", "__init__", "don", "3", "3.14", "1,000", "²", "٣", "Ⅻ", "½", "-", "--",
          "...", "!?", "$", "(", ")", "\"", "é", "ß", "ﬁ", "你好", "こんにちは", "한국어", "Привет", "مرحبا",
          "😀", "👍🏽", "\x00", "\x7f", "\ufffd", "<s>", "</s>", "<mask>"]
ALL_CHARS = st.characters(blacklist_categories=("Cs", "Cn"))  # every assigned code point (Python's tables)
TEXT = st.lists(st.sampled_from(SPACES + CONTRACTIONS + PIECES) | ALL_CHARS, max_size=30).map("".join)


def _traced(tok):
    """ids and offsets as one traced graph (eager calls are slow for many small batches)."""
    if not hasattr(tok, "_test_offsets"):
        tok._test_offsets = tf.function(tok.tokenize_with_offsets,
                                        input_signature=[tf.TensorSpec([None], tf.string)])
    return tok._test_offsets


def assert_like_hf(tok, hf, texts):
    ref = hf(texts, add_special_tokens=False, split_special_tokens=True, return_offsets_mapping=True)
    ids, starts, ends = (t.to_list() for t in _traced(tok)(tf.constant(texts)))
    for i, text in enumerate(texts):
        assert ids[i] == ref["input_ids"][i], repr(text)
        assert list(zip(starts[i], ends[i])) == [tuple(o) for o in ref["offset_mapping"][i]], repr(text)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(texts=st.lists(TEXT, min_size=1, max_size=16))
def test_random_text_matches_hf(bpe_tok, hf_roberta, texts):
    assert_like_hf(bpe_tok, hf_roberta, texts)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(raw=st.lists(st.binary(max_size=40), min_size=1, max_size=8))
def test_random_bytes_match_hf_on_the_replaced_text(bpe_tok, hf_roberta, raw):
    """Invalid UTF-8 is read as Python's `decode("utf-8", "replace")` reads it."""
    fixed = [b.decode("utf-8", "replace") for b in raw]
    assert bpe_tok(tf.constant(raw)).to_list() == hf_roberta(fixed, add_special_tokens=False,
                                                             split_special_tokens=True)["input_ids"]


@pytest.mark.slow
@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(texts=st.lists(st.lists(st.sampled_from(SPACES + CONTRACTIONS + PIECES) | ALL_CHARS, max_size=200)
                      .map("".join), min_size=1, max_size=32))
def test_long_random_text_matches_hf(bpe_tok, hf_roberta, texts):
    assert_like_hf(bpe_tok, hf_roberta, texts)


@pytest.mark.slow
def test_every_assigned_code_point_matches_hf(bpe_tok, hf_roberta):
    """Each code point alone, between letters, after a space and doubled; every code point Python's
    `unicodedata` knows (Unicode 14; see `byte_level_split` on the newer ones)."""
    chars = [chr(c) for c in range(0x110000) if unicodedata.category(chr(c)) not in ("Cs", "Cn")]
    for i in range(0, len(chars), 20_000):
        assert_like_hf(bpe_tok, hf_roberta, [f"a{c}b {c}x {c}{c}'s{c}" for c in chars[i:i + 20_000]])


@pytest.mark.slow
def test_huge_text_matches_hf(bpe_tok, hf_roberta, held_out_lines):
    text = "\n".join(held_out_lines) * 3  # about 1.5 MB in one string
    assert_like_hf(bpe_tok, hf_roberta, [text, "x" * 100_000, "ab" * 50_000 + " " * 1000])
