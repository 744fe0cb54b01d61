"""BertTokenizer's fast routes (ASCII normalisation, FastWordpieceTokenizer's own splitting) against HF
`tokenizers` and against the regex-split path, and the batch order when rows take different routes."""

import pytest
import tensorflow as tf
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kbert.text import BertTokenizer, normalization

ASCII = [chr(c) for c in range(128)]
CONTEXTS = ("{c}", "a{c}b", " {c} ", "x{c}{c}y Z", "{c}Hello{c}", "un{c}affable", "THE{c}cat's", "{c}" * 3)


def hf_tokenizer(minilm, lowercase):
    tokenizers = pytest.importorskip("tokenizers")
    hf = tokenizers.Tokenizer.from_file(str(minilm / "tokenizer.json"))
    hf.no_truncation()
    hf.no_padding()
    if not lowercase:
        hf.normalizer = tokenizers.normalizers.BertNormalizer(lowercase=False, strip_accents=False)
    return hf


@pytest.fixture(scope="module", params=[True, False], ids=["uncased", "cased"])
def pair(request, minilm):
    return BertTokenizer(minilm / "vocab.txt", lowercase=request.param), hf_tokenizer(minilm, request.param)


def _traced(tok):
    """The three entry points as one traced graph (eager calls are slow for many small batches)."""
    if not hasattr(tok, "_test_all"):
        tok._test_all = tf.function(
            lambda x: (tok(x), tok.tokenize_words(x), tok.tokenize_with_offsets(x)),
            input_signature=[tf.TensorSpec([None], tf.string)])
    return tok._test_all


def assert_like_hf(tok, hf, texts):
    """ids, character offsets and word ids of every text equal HF's (and the three methods agree)."""
    ref = hf.encode_batch(texts, add_special_tokens=False)
    plain, words, offsets = _traced(tok)(tf.constant(texts))
    ids, starts, ends = (t.to_list() for t in offsets)
    plain_ids, word_ids = (t.to_list() for t in words)
    assert plain.to_list() == plain_ids == ids
    for i, (text, enc) in enumerate(zip(texts, ref)):
        assert ids[i] == enc.ids, repr(text)
        assert list(zip(starts[i], ends[i])) == [tuple(o) for o in enc.offsets], repr(text)
        assert word_ids[i] == enc.word_ids, repr(text)


def test_every_ascii_character_in_context_matches_hf(pair):
    tok, hf = pair
    texts = [ctx.format(c=c) for c in ASCII for ctx in CONTEXTS]
    texts += ["a" * 100, "A" * 101 + " b", "x" * 99 + "\x00x", "x" * 100 + "\x00x", "\x00" * 5, "\t\n\r"]
    assert_like_hf(tok, hf, texts)


WORDS = ["the", "The", "CAT", "un", "affable", "don't", "3.14", "$5", "a" * 101, "x_y", "e-mail", "~^`|"]
ascii_text = st.lists(st.sampled_from(ASCII) | st.sampled_from(WORDS), max_size=25).map("".join)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(texts=st.lists(ascii_text, min_size=1, max_size=16))
def test_random_ascii_matches_hf(pair, texts):
    tok, hf = pair
    assert_like_hf(tok, hf, texts)


MIXED = [
    "plain ascii, here!",
    "Café naïve 你好，世界!",
    "",
    "é" * 30,  # a long run of word characters: regex-split route
    "a" * 60 + "é" * 40,  # 100 characters but 140 bytes: not [UNK]
    "b" * 61 + "é" * 40 + " ok",  # 101 characters: [UNK]
    "Control\x00chars\x7f ok",
    "Zero\u200bwidth ß ﬁ ™ \u3000 end",
    "\U0002b820 x",  # ICU counts it as punctuation, the reference does not
    "é" * 13 + "\u2014" + "é" * 13,  # two short words: the long-run check flags it all the same
    "the CAT sat",
]


def test_mixed_batch_keeps_order_and_matches_hf(pair):
    tok, hf = pair
    assert_like_hf(tok, hf, MIXED)
    assert_like_hf(tok, hf, MIXED[::-1])
    single = [tok(tf.constant([t])).to_list()[0] for t in MIXED]
    assert tok(tf.constant(MIXED)).to_list() == single


def test_routes_each_row_as_documented():
    long_runs = tf.constant(["é" * 25, "é" * 26, "é" * 25 + " " + "é" * 25, "\U0002b820", "x" * 40 + "é",
                             "é" * 13 + "\u2014" + "é" * 13, "é" * 13 + "你" + "é" * 13])
    assert normalization.needs_exact_split(long_runs, 100).numpy().tolist() == [
        False, True, False, True, True, True, False]
    plain = tf.strings.regex_full_match(tf.constant(["a\tb\n~", "ab\x00", "\x7f", "é", ""]),
                                        normalization.PRINTABLE_ASCII)
    assert plain.numpy().tolist() == [True, False, False, False, True]


def test_run_check_covers_every_word_character():
    """`RUN_CHAR` holds every code point that BERT's splitting puts inside words (and may hold more)."""
    _, _, classes = normalization.code_point_table(True, True)
    words = [c for c in range(normalization.NUM_CODE_POINTS) if classes[c] == normalization.WORD
             and not 0xD800 <= c < 0xE000]
    matched = tf.strings.regex_full_match(tf.constant([chr(c) for c in words]), normalization.RUN_CHAR)
    assert words and tf.reduce_all(matched).numpy(), [hex(words[i]) for i in tf.where(~matched)[:10, 0].numpy()]


def test_long_word_limit_in_characters(minilm):
    tok = BertTokenizer(minilm / "vocab.txt")
    unk = tok.unk_token_id
    ids = tok(["a" * 60 + "é" * 40, "a" * 61 + "é" * 40, "é" * 101, "é" * 100, "a" * 101, "é" * 50 + "!"])
    assert [unk in row for row in ids.to_list()] == [False, True, True, False, True, False]
    assert ids.to_list()[1] == ids.to_list()[2] == ids.to_list()[4] == [unk]


def test_invalid_utf8_only_touches_its_rows(minilm):
    tok = BertTokenizer(minilm / "vocab.txt")
    bad = tf.constant([b"ok \xff\xfe here", b"caf\xc3\xa9", b"\xed\xa0\x80x", b"\xe0\x80\x80y", b"fine"])
    clean = tf.constant(["ok  here", "café", "x", "y", "fine"])
    assert tok(bad).to_list() == tok(clean).to_list()
    assert normalization.to_valid_utf8(bad).numpy().tolist() == tf.strings.unicode_transcode(
        bad, "UTF-8", "UTF-8", errors="replace", replacement_char=0xFFFD).numpy().tolist()


def test_input_shapes_and_graph_modes(tiny_vocab_file):
    tok = BertTokenizer(tiny_vocab_file)
    texts = ["the cat", "a déjà dog", "", "THE\x00CATS!"]
    want = [[5, 6], [14, 1, 10], [], [1, 19]]  # "\x00" is deleted, not a split: "thecats"
    assert tok(texts).to_list() == want
    assert tok(tf.constant(texts)[:, tf.newaxis]).to_list() == want
    assert tok(texts[1]).numpy().tolist() == want[1]
    graph = tf.function(lambda x: tok(x), input_signature=[tf.TensorSpec([None], tf.string)])
    assert graph(tf.constant(texts)).to_list() == want
    assert graph(tf.constant([], tf.string)).to_list() == []
    assert tok(tf.constant([], tf.string)).to_list() == []
    ds = tf.data.Dataset.from_tensor_slices(texts).map(tok)
    assert [x.tolist() for x in ds.as_numpy_iterator()] == want
    batched = tf.data.Dataset.from_tensor_slices(texts).batch(3).map(tok)
    assert [r for b in batched for r in b.to_list()] == want


@pytest.mark.slow
@pytest.mark.parametrize("lowercase", [True, False])
def test_fast_splitter_agrees_with_regex_split_on_every_code_point(lowercase):
    """Every code point the router sends to FastWordpieceTokenizer's splitting is split as by the regex."""
    tok = BertTokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "a", "b"], lowercase=lowercase)
    cps = [c for c in range(0x110000) if not 0xD800 <= c < 0xE000]
    for i in range(0, len(cps), 200_000):
        text = tf.constant([f"a{chr(c)}b" for c in cps[i:i + 200_000]])
        norm = normalization.normalize(text, lowercase, lowercase)
        ours = tok(text)
        regex = tok._split_ids(norm)
        routed = normalization.needs_exact_split(norm, tok.max_chars_per_word)
        differ = tf.reduce_any(tf.not_equal(ours.to_tensor(-1, shape=[None, 8]),
                                            regex.to_tensor(-1, shape=[None, 8])), axis=1)
        assert not tf.reduce_any(differ).numpy()
        fast = tok._presplit.tokenize(norm)
        fast_differs = tf.reduce_any(tf.not_equal(fast.to_tensor(-1, shape=[None, 8]),
                                                  regex.to_tensor(-1, shape=[None, 8])), axis=1)
        # The routing list is tight: it holds only code points where the splitters really disagree.
        assert tf.reduce_all(tf.equal(fast_differs, routed)).numpy(), [
            hex(cps[i + j]) for j in tf.where(fast_differs != routed)[:, 0].numpy()[:10]]
