"""ByteLevelBpeTokenizer: ids and offsets against HF's RobertaTokenizer, hand-checked cases, graph use."""

import json
import pathlib

import pytest
import tensorflow as tf

from kbert.text import ByteLevelBpeTokenizer, load_tokenizer
from kbert.text.byte_level_vocab import byte_alphabet

CORPUS = json.loads((pathlib.Path(__file__).parent / "mixed_corpus.json").read_text())
EDGES = ["", " ", "  ", "\n", "a", " a", "a ", "a  b", "a\n\n b", "\t x", "x\u3000 y", "\u00a0 z", "'s", " 's",
         "  's", "\n's", "I'm here, you'll see: it's 'quoted' 'S", "3.14159 +1e-10 1,000,000 ²³", "😀👍🏽 é",
         "-" * 70, "=" * 33 + " x", "aaaaaaa", "  \n  \t ", "x" * 500]


def hf_encode(hf, texts):
    """HF ids and offsets, no special tokens, special-token text as plain text (our convention)."""
    out = hf(list(texts), add_special_tokens=False, split_special_tokens=True, return_offsets_mapping=True)
    return out["input_ids"], [[tuple(o) for o in row] for row in out["offset_mapping"]]


def assert_like_hf(tok, hf, texts):
    """ids and character offsets equal HF's; tokenize, tokenize_words and tokenize_with_offsets agree."""
    ref_ids, ref_offsets = hf_encode(hf, texts)
    ids, starts, ends = (t.to_list() for t in tok.tokenize_with_offsets(tf.constant(texts)))
    assert tok(tf.constant(texts)).to_list() == ids == tok.tokenize_words(tf.constant(texts))[0].to_list()
    for i, text in enumerate(texts):
        assert ids[i] == ref_ids[i], repr(text)
        assert list(zip(starts[i], ends[i])) == ref_offsets[i], repr(text)


def tiny_tokenizer(merges, extra=(), **kwargs):
    """A hand-made vocabulary: specials 0-2, the 256 bytes (id = 3 + byte), then `extra`."""
    return ByteLevelBpeTokenizer(["<s>", "<pad>", "</s>", *byte_alphabet(), *extra], merges, **kwargs)


def test_held_out_python_docs_match_hf(bpe_tok, hf_roberta, held_out_lines):
    ref, _ = hf_encode(hf_roberta, held_out_lines)
    ours = bpe_tok(tf.constant(held_out_lines)).to_list()
    assert sum(len(r) for r in ref) > 10_000  # the text is long enough to exercise merging
    assert [i for i, (a, b) in enumerate(zip(ours, ref)) if a != b] == []


def test_mixed_corpus_and_edge_cases_match_hf(bpe_tok, hf_roberta):
    assert_like_hf(bpe_tok, hf_roberta, CORPUS + EDGES)


def test_detokenize_restores_the_text(bpe_tok):
    texts = CORPUS + EDGES
    assert bpe_tok.detokenize(bpe_tok(tf.constant(texts))).numpy().tolist() == [t.encode() for t in texts]
    assert bpe_tok.detokenize(bpe_tok("hello there")).numpy() == b"hello there"


def test_add_prefix_space_matches_hf(bpe_dir, hf_roberta):
    transformers = pytest.importorskip("transformers")
    hf = transformers.RobertaTokenizer.from_pretrained(str(bpe_dir), add_prefix_space=True)
    tok = ByteLevelBpeTokenizer(bpe_dir / "vocab.json", bpe_dir / "merges.txt", add_prefix_space=True)
    assert_like_hf(tok, hf, CORPUS[:20] + EDGES)
    assert tok(["hello"]).to_list() == tok([" hello"]).to_list() != hf_roberta(["hello"])["input_ids"]


def test_special_token_text_is_plain_text(bpe_tok, hf_roberta):
    text = "a <s> b </s><mask>"
    assert bpe_tok.mask_token_id not in bpe_tok(text).numpy().tolist()
    assert bpe_tok(text).numpy().tolist() == hf_roberta(text, add_special_tokens=False,
                                                        split_special_tokens=True)["input_ids"]
    assert hf_roberta.mask_token_id in hf_roberta(text, add_special_tokens=False)["input_ids"]  # HF's default


def test_invalid_utf8_is_replaced_as_python_decodes(bpe_tok, hf_roberta):
    bad = [b"caf\xc3 \xff\xfebad\x80 ok", b"\xc3\x28", b"\xed\xa0\x80x", b"\xe0\x80\x80y", b"\xf4\x90\x80\x80!"]
    fixed = [b.decode("utf-8", "replace") for b in bad]
    assert_like_hf(bpe_tok, hf_roberta, fixed)
    assert bpe_tok(tf.constant(bad)).to_list() == bpe_tok(tf.constant(fixed)).to_list()
    _, starts, ends = bpe_tok.tokenize_with_offsets(tf.constant(bad))
    ref = hf_encode(hf_roberta, fixed)[1]
    assert [list(zip(s, e)) for s, e in zip(starts.to_list(), ends.to_list())] == ref


def test_hand_checked_merging():
    tok = tiny_tokenizer(["a a", "aa a", "Ġ t", "h e", "Ġt he"], ["aa", "aaa", "Ġt", "he", "Ġthe"])
    a, aa, aaa, the = 3 + ord("a"), 259, 260, 263
    # Overlapping occurrences of the lowest-ranked pair merge left to right: "aaaaa" -> aa aa a -> aa aaa.
    assert tok(["aaa", "aaaa", "aaaaa", "the the"]).to_list() == [[aaa], [aa, aa], [aa, aaa],
                                                                  [3 + ord("t"), 262, the]]
    assert tiny_tokenizer(["a a"], ["aa"])(["aaa"]).to_list() == [[aa, a]]
    assert (tok.cls_token_id, tok.pad_token_id, tok.sep_token_id, tok.unk_token_id, tok.mask_token_id) == (
        0, 1, 2, None, None)
    assert tok.vocabulary_size() == 264 and tok.token_to_id("Ġthe") == the and tok.id_to_token(a) == "a"
    scalar = tok("the")
    assert isinstance(scalar, tf.Tensor) and scalar.numpy().tolist() == [3 + ord("t"), 262]


def test_word_ids_start_at_white_space():
    tok = tiny_tokenizer(["Ġ t", "h e", "Ġt he"], ["Ġt", "he", "Ġthe"])
    ids, words = tok.tokenize_words(["the the,x\ny", "", " the"])
    assert words.to_list() == [[0, 0, 1, 1, 1, 2, 3], [], [0]]  # t he | Ġthe , x | Ċ | y
    assert tok.word_ids(ids).to_list() == words.to_list()


def test_graph_tf_data_config_and_files(bpe_tok, tmp_path):
    texts = ["the cat sat", "a good dog!", ""]
    eager = bpe_tok(texts).to_list()
    graph = tf.function(lambda x: bpe_tok(x), input_signature=[tf.TensorSpec([None], tf.string)])
    assert graph(tf.constant(texts)).to_list() == eager
    assert graph(tf.constant([], tf.string)).to_list() == []
    assert bpe_tok(tf.constant(texts)[:, tf.newaxis]).to_list() == eager
    ds = tf.data.Dataset.from_tensor_slices(texts).map(bpe_tok)
    assert [x.tolist() for x in ds.as_numpy_iterator()] == eager
    clone = ByteLevelBpeTokenizer.from_config(bpe_tok.get_config())
    assert clone(texts).to_list() == eager and clone.get_config()["merges"] == bpe_tok.merges
    bpe_tok.save_vocabulary(tmp_path)
    assert load_tokenizer(tmp_path)(texts).to_list() == eager
    assert load_tokenizer(tmp_path / "vocab.json").get_vocabulary() == bpe_tok.get_vocabulary()


def test_saved_model_holds_the_tables(bpe_dir, tmp_path):
    files = tmp_path / "files"
    files.mkdir()
    for name in ("vocab.json", "merges.txt"):
        (files / name).write_bytes((bpe_dir / name).read_bytes())
    tok = ByteLevelBpeTokenizer(files / "vocab.json", files / "merges.txt")
    want = tok(["Hello there, general Kenobi"]).to_list()
    module = tf.Module()
    module.tok = tok
    module.f = tf.function(lambda x: tok.tokenize_with_offsets(x)[0].to_tensor(-1),
                           input_signature=[tf.TensorSpec([None], tf.string)])
    tf.saved_model.save(module, str(tmp_path / "sm"))
    for name in ("vocab.json", "merges.txt"):
        (files / name).unlink()  # no path to the vocabulary may be needed at load time
    restored = tf.saved_model.load(str(tmp_path / "sm"))
    assert restored.f(tf.constant(["Hello there, general Kenobi"])).numpy().tolist() == want


def test_bad_vocabularies_are_named():
    with pytest.raises(ValueError, match="</s>"):
        ByteLevelBpeTokenizer(["<s>", "<pad>", *byte_alphabet()], [])
    with pytest.raises(ValueError, match="required token"):
        ByteLevelBpeTokenizer(["<s>", "<pad>", "</s>", "a"], [])
    with pytest.raises(ValueError, match=r"rule 1 .*'Ġx'"):
        tiny_tokenizer(["Ġ x"])
    with pytest.raises(ValueError, match="rule 2 is not two tokens"):
        tiny_tokenizer(["a b", "abc"], ["ab"])
    with pytest.raises(ValueError, match="rule 1 uses 'ab', which rule 2 makes later"):
        tiny_tokenizer(["ab c", "a b"], ["ab", "abc"])
    with pytest.raises(ValueError, match="id 0 is given to both"):
        ByteLevelBpeTokenizer({"<s>": 0, "<pad>": 0}, [])


def test_scalar_and_shape_errors(bpe_tok):
    with pytest.raises(ValueError, match="scalar or 1-D"):
        bpe_tok(tf.constant([["a", "b"]]))
    ids, starts, ends = bpe_tok.tokenize_with_offsets("Hello")
    assert ids.shape.rank == 1 and starts.numpy().tolist()[0] == 0 and ends.numpy().tolist()[-1] == 5
