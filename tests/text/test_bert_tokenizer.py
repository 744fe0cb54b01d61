"""BertTokenizer: ids, offsets and word ids against HF `tokenizers`, plus hand-checked tiny cases."""

import json
import pathlib

import pytest
import tensorflow as tf

from kbert.text import BertTokenizer, load_tokenizer

CORPUS = json.loads((pathlib.Path(__file__).parent / "mixed_corpus.json").read_text())


def hf_tokenizer(minilm, lowercase=True):
    tokenizers = pytest.importorskip("tokenizers")
    hf = tokenizers.Tokenizer.from_file(str(minilm / "tokenizer.json"))
    hf.no_truncation()
    hf.no_padding()
    if not lowercase:
        hf.normalizer = tokenizers.normalizers.BertNormalizer(lowercase=False, strip_accents=False)
    return hf


@pytest.fixture(scope="module")
def minilm_tok(minilm):
    return load_tokenizer(minilm)


def test_corpus_covers_the_issue_list():
    text = "".join(CORPUS)
    for needle in ["é", "'", "3.14", "我", "の", "한", "😀", "\x00", "\u200b", "b" * 101, "\uff0c"]:
        assert needle in text
    assert "" in CORPUS and "   " in CORPUS


@pytest.mark.parametrize("lowercase", [True, False])
def test_ids_match_hf_tokenizers_on_mixed_corpus(minilm, lowercase):
    tok = BertTokenizer(minilm / "vocab.txt", lowercase=lowercase)
    hf = hf_tokenizer(minilm, lowercase)
    ours = tok(tf.constant(CORPUS)).to_list()
    ref = [e.ids for e in hf.encode_batch(CORPUS, add_special_tokens=False)]
    for line, a, b in zip(CORPUS, ours, ref):
        assert a == b, repr(line)


def test_offsets_and_word_ids_match_hf_tokenizers(minilm, minilm_tok):
    hf = hf_tokenizer(minilm)
    ids, starts, ends = minilm_tok.tokenize_with_offsets(tf.constant(CORPUS))
    fast_ids, word_ids = minilm_tok.tokenize_words(tf.constant(CORPUS))
    assert ids.to_list() == fast_ids.to_list()  # per-character and whole-string paths agree
    assert minilm_tok.word_ids(ids).to_list() == word_ids.to_list()  # what call_with_offsets uses
    for i, (line, enc) in enumerate(zip(CORPUS, hf.encode_batch(CORPUS, add_special_tokens=False))):
        assert ids[i].numpy().tolist() == enc.ids, repr(line)
        got = list(zip(starts[i].numpy().tolist(), ends[i].numpy().tolist()))
        assert got == [tuple(o) for o in enc.offsets], repr(line)
        assert word_ids[i].numpy().tolist() == enc.word_ids, repr(line)


def test_offsets_slice_the_source_text(minilm_tok):
    text = tf.constant(["Café naïve 你好，世界! Zero\u200bwidth"])
    ids, starts, ends = minilm_tok.tokenize_with_offsets(text)
    pieces = tf.strings.substr(text[0], starts[0], ends[0] - starts[0], unit="UTF8_CHAR").numpy()
    assert [p.decode() for p in pieces] == ["Café", "naïve", "你", "好", "，", "世", "界", "!", "Zero", "wi", "dt", "h"]


def test_full_width_cjk_punctuation_keeps_its_own_ids(minilm_tok):
    vocab = minilm_tok.vocabulary
    ids = minilm_tok(tf.constant(["，。！？："])).to_list()[0]
    assert [vocab[i] for i in ids] == ["，", "。", "！", "？", "："]
    assert ids[0] != minilm_tok.token_to_id(",")


def test_long_words_count_characters_not_bytes(minilm_tok):
    unk = minilm_tok.unk_token_id
    assert unk not in minilm_tok(tf.constant(["a" * 100])).to_list()[0]
    assert minilm_tok(tf.constant(["a" * 101])).to_list()[0] == [unk]
    # 100 two-byte characters (200 bytes) are still within the 100-character limit.
    assert minilm_tok(tf.constant(["é" * 100])).to_list()[0] != [unk]


def test_invalid_utf8_is_replaced_and_dropped(minilm_tok):
    bad = tf.constant([b"caf\xc3 \xff\xfebad\x80 ok", b"\xc3\x28"])
    clean = tf.constant(["caf bad ok", "("])
    assert minilm_tok(bad).to_list() == minilm_tok(clean).to_list()
    ids, starts, ends = minilm_tok.tokenize_with_offsets(bad)
    # Offsets count each invalid sequence as one character: "caf\ufffd \ufffd\ufffdbad\ufffd ok".
    assert ids.to_list() == minilm_tok(clean).to_list()
    assert starts.to_list()[0] == [0, 7, 12] and ends.to_list()[0] == [3, 10, 14]


def test_tiny_vocab_hand_checked(tiny_vocab_file):
    tok = BertTokenizer(tiny_vocab_file)
    assert tok(["The cats ran, unaffable!", "zebra", ""]).to_list() == [
        [5, 6, 12, 11, 18, 21, 22, 23, 19], [1], []
    ]
    scalar = tok("the dog")
    assert isinstance(scalar, tf.Tensor) and scalar.numpy().tolist() == [5, 10]
    assert (tok.cls_token_id, tok.sep_token_id, tok.pad_token_id, tok.unk_token_id, tok.mask_token_id) == (
        2, 3, 0, 1, 4)
    assert tok.vocabulary_size() == 24 and tok.id_to_token(6) == "cat" and tok.token_to_id("##s") == 12
    assert tok.detokenize(tok(["the cats ran"])).numpy().tolist() == [b"the cats ran"]
    ids, words = tok.tokenize_words(["the cats ran, un"])
    assert words.to_list() == [[0, 1, 1, 2, 3, 4]]


def test_cased_mode_keeps_case(tiny_vocab_file):
    tok = BertTokenizer(tiny_vocab_file, lowercase=False)
    assert tok(["the The"]).to_list() == [[5, 1]]


def test_special_token_text_is_plain_text(tiny_vocab_file):
    # Like google-research/bert (unlike HF's added-token matching), "[SEP]" in text is not a separator.
    tok = BertTokenizer(tiny_vocab_file)
    assert tok(["[SEP]"]).to_list() == [[1, 1, 1]]


def test_missing_special_token_is_named():
    with pytest.raises(ValueError, match=r"\[SEP\]"):
        BertTokenizer(["[PAD]", "[UNK]", "[CLS]", "a"])


def test_graph_tf_data_and_config(tiny_vocab_file, tmp_path):
    tok = BertTokenizer(tiny_vocab_file)
    texts = ["the cat sat", "a good dog!"]
    eager = tok(texts).to_list()
    graph = tf.function(lambda x: tok(x).to_tensor())(tf.constant(texts)).numpy().tolist()
    assert [[i for i in row if i] for row in graph] == eager
    ds = tf.data.Dataset.from_tensor_slices(texts).map(tok)
    assert [x.tolist() for x in ds.as_numpy_iterator()] == eager
    clone = BertTokenizer.from_config(tok.get_config())
    assert clone(texts).to_list() == eager and clone.get_config()["vocabulary"][5] == "the"
    tok.save_vocabulary(tmp_path)
    assert json.loads((tmp_path / "tokenizer_config.json").read_text())["do_lower_case"] is True
    assert load_tokenizer(tmp_path)(texts).to_list() == eager


def test_saved_model_holds_the_vocabulary(tiny_vocab_file, tmp_path):
    tok = BertTokenizer(tiny_vocab_file)
    module = tf.Module()
    module.tok = tok
    module.f = tf.function(lambda x: tok(x).to_tensor(), input_signature=[tf.TensorSpec([None], tf.string)])
    tf.saved_model.save(module, str(tmp_path / "sm"))
    tiny_vocab_file.unlink()  # no path to the vocabulary may be needed at load time
    restored = tf.saved_model.load(str(tmp_path / "sm"))
    assert restored.f(tf.constant(["the cat"])).numpy().tolist() == [[5, 6]]


@pytest.mark.slow
@pytest.mark.parametrize("lowercase", [True, False])
def test_every_code_point_of_common_blocks_matches_hf(minilm, lowercase):
    """Each code point alone and inside words; blocks whose Unicode data predates both libraries.

    Known divergence (documented): about 570 code points assigned or re-categorised in Unicode 11+
    (e.g. U+061D, U+2E43-U+2E5D, U+0890) follow the newer tables of TF's RE2, not the reference's.
    """
    blocks = [(0x0000, 0x0600), (0x0900, 0x097F), (0x1100, 0x1200), (0x2000, 0x2070), (0x20A0, 0x2200),
              (0x3000, 0x3100), (0x3400, 0x4DC0), (0x4E00, 0xA000), (0xAC00, 0xD7A4), (0xF900, 0xFB07),
              (0xFE30, 0xFFF0), (0x1F300, 0x1F650), (0x20000, 0x20100)]
    chars = [chr(c) for lo, hi in blocks for c in range(lo, hi) if not 0xD800 <= c < 0xE000]
    texts = [f"a{c}b {c} x{c}{c}" for c in chars]
    tok = BertTokenizer(minilm / "vocab.txt", lowercase=lowercase)
    hf = hf_tokenizer(minilm, lowercase)
    ours = tok(tf.constant(texts)).to_list()
    ref = [e.ids for e in hf.encode_batch(texts, add_special_tokens=False)]
    bad = [hex(ord(c)) for c, a, b in zip(chars, ours, ref) if a != b]
    assert not bad
