"""SentencePieceTokenizer fuzzed against transformers' AlbertTokenizer: random text of every Unicode block,
white space of every kind, quote pairs, control characters, invalid UTF-8, empty and huge strings; ids,
character offsets and word ids must be HF's (offsets at quote pairs as kbert's docstring says).

Characters assigned after Unicode 3.2 whose marks or decompositions HF's older Unicode tables do not know are
a documented divergence (`kbert.text.sentencepiece_normalization`): the random text leaves out what Unicode
3.2 did not assign but Python's Unicode does, and the slow test over every code point bounds that set.
"""

import random
import unicodedata

import pytest
import tensorflow as tf
from albert_reference import HELD_OUT_MODULES, docstring_lines, kbert_offsets
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kbert.text.sentencepiece_normalization import WHITE_SPACE

SPACES = [chr(c) for c in sorted(WHITE_SPACE)] + ["\u200b", "\u2581", "\ufeff", "\u180e", "\r\n", "  "]
MARKS = ["``", "''", "`", "'", '"', "\x00", "\x01", "\x7f", "\ufffd", "\u0301", "\u200d", "[SEP]"]
WORDS = ["the", "The", "FILE", "zipfile", "Café", "naïve", "1,000", "3.14", "ﬁ", "ΟΔΟΣ", "İ", "한국어", "日本語", "😀"]
SETTINGS = dict(deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


def comparable(char: str) -> bool:
    """Known to Unicode 3.2 (and so to HF's tables), or unassigned in Python's Unicode too."""
    return unicodedata.ucd_3_2_0.category(char) != "Cn" or unicodedata.category(char) == "Cn"


any_char = st.characters(exclude_categories=("Cs",)).filter(comparable)
text = st.lists(st.sampled_from(WORDS) | st.sampled_from(SPACES) | st.sampled_from(MARKS) | any_char,
                max_size=30).map("".join)


def traced(tok):
    """The three entry points as one traced graph (eager calls are slow for many small batches)."""
    if not hasattr(tok, "_fuzz_all"):
        tok._fuzz_all = tf.function(lambda x: (tok(x), tok.tokenize_words(x)[1], tok.tokenize_with_offsets(x)),
                                    input_signature=[tf.TensorSpec([None], tf.string)])
    return tok._fuzz_all


def deleted_prefix(hf, text: str) -> int:
    """How many characters at the start of `text` HF's normaliser deletes.

    HF's offsets after such a start are off (its character map's alignment loses deletions before the first
    character it keeps: "\x01the" gives "▁the" (0, 3)); HF's offsets of the rest, moved by this count, are
    the right ones, which kbert gives."""
    normalize = hf.backend_tokenizer.normalizer.normalize_str
    return next((i for i, c in enumerate(text) if normalize(c)), len(text))


def assert_like_hf(tok, hf, texts, raw=None):
    """ids, character offsets and word ids of every text equal HF's (and the entry points agree).

    `raw`: the bytes given to kbert when they are not `texts` encoded (invalid UTF-8)."""
    ids, word_ids, (offset_ids, starts, ends) = traced(tok)(tf.constant(raw or texts))
    ids, word_ids, offset_ids, starts, ends = (t.to_list() for t in (ids, word_ids, offset_ids, starts, ends))
    skip = [deleted_prefix(hf, t) for t in texts]
    ref = hf([t[k:] for t, k in zip(texts, skip)], add_special_tokens=False, return_offsets_mapping=True,
             split_special_tokens=True)
    assert ids == offset_ids
    for i, (t, k) in enumerate(zip(texts, skip)):
        assert ids[i] == ref["input_ids"][i], repr(t)
        want = kbert_offsets(t, [(a + k, b + k) for a, b in ref["offset_mapping"][i]])
        assert list(zip(starts[i], ends[i])) == want, repr(t)
        assert word_ids[i] == ref.word_ids(i), repr(t)


@settings(max_examples=40, **SETTINGS)
@given(texts=st.lists(text, min_size=1, max_size=16))
def test_random_text_matches_hf(albert_tok, hf_albert, texts):
    assert_like_hf(albert_tok, hf_albert, texts)


@settings(max_examples=25, **SETTINGS)
@given(data=st.lists(st.binary(max_size=40) | text.map(str.encode), min_size=1, max_size=8))
def test_invalid_utf8_is_read_as_replacement_characters(albert_tok, hf_albert, data):
    assert_like_hf(albert_tok, hf_albert, [d.decode("utf-8", "replace") for d in data], raw=data)


def test_empty_blank_and_long_strings(albert_tok, hf_albert, albert_held_out_lines):
    rng = random.Random(0)
    alphabet = WORDS + SPACES + MARKS + [" "] * 20
    long = "".join(rng.choice(alphabet) for _ in range(5000))
    texts = ["", " ", "\t\n", "\u3000", "\x00", "``", "''", " ".join(albert_held_out_lines[:300]), long, "a" * 10_000]
    assert_like_hf(albert_tok, hf_albert, texts)


@pytest.mark.slow
@settings(max_examples=400, **SETTINGS)
@given(texts=st.lists(text, min_size=1, max_size=32))
def test_long_fuzz_matches_hf(albert_tok, hf_albert, texts):
    assert_like_hf(albert_tok, hf_albert, texts)


@pytest.mark.slow
def test_huge_strings_match_hf(albert_tok, hf_albert):
    lines = docstring_lines(HELD_OUT_MODULES)
    rng = random.Random(1)
    mixed = "".join(rng.choice(lines + SPACES + MARKS + WORDS) for _ in range(40_000))
    assert_like_hf(albert_tok, hf_albert, [" ".join(lines), mixed, "\u0627" * 300_000])


@pytest.mark.slow
def test_every_code_point_in_context(albert_tok, hf_albert):
    """Each code point inside, around and between words. What differs must be code points that Unicode
    3.2 did not assign (marks and decompositions newer than HF's Unicode tables): a few hundred at most."""
    codes = [c for c in range(0x110000) if not 0xD800 <= c < 0xE000]
    differ = []
    for i in range(0, len(codes), 100_000):
        chunk = codes[i:i + 100_000]
        texts = [f"a{chr(c)}b {chr(c)} x{chr(c)}{chr(c)}" for c in chunk]
        ids, _, (_, starts, ends) = traced(albert_tok)(tf.constant(texts))
        ids, starts, ends = ids.to_list(), starts.to_list(), ends.to_list()
        ref = hf_albert.backend_tokenizer.encode_batch(texts, add_special_tokens=False)
        for c, t, a, s, e, r in zip(chunk, texts, ids, starts, ends, ref):
            if a != r.ids:
                differ.append(c)
            else:
                assert list(zip(s, e)) == kbert_offsets(t, r.offsets), hex(c)
    assert all(unicodedata.ucd_3_2_0.category(chr(c)) == "Cn" for c in differ), [hex(c) for c in differ[:20]]
    assert len(differ) < 400, len(differ)
