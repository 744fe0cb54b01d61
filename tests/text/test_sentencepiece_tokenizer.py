"""SentencePieceTokenizer: ids, offsets and word ids against transformers' AlbertTokenizer (fast, the one
`AutoTokenizer` gives) on text the model never saw, pairs through BertPreprocessor, and the layer's API."""

import json

import numpy as np
import pytest
import tensorflow as tf
from albert_reference import MIXED_CORPUS, hf_albert_tokenizer, hf_encode, kbert_offsets, tiny_model

from kbert.text import BertPreprocessor, SentencePieceTokenizer, load_tokenizer

# Hand-picked cases of every normalisation step: quote pairs (odd runs too), accents, case, the character
# map (ligatures, full width, circled digits), spaces of all kinds, deleted characters, NUL.
EDGE_CASES = ["a ``quoted'' b", "```a''' ``", "x\x01y \u200b z\x00w", "1,000 ①② ﬁne Ｈｅｌｌｏ", "e\u0301te ΟΔΟΣ",
              "\u3000 lead\u2028and\u00a0trail \t", "x\x0by\x85z", "a\u2581b \u2581", "İstanbul ß ǅ ㈱"]


def test_ids_match_hf_on_held_out_text(albert_tok, hf_albert, albert_held_out_lines):
    texts = albert_held_out_lines[:400] + MIXED_CORPUS + EDGE_CASES
    ours = albert_tok(tf.constant(texts)).to_list()
    ref = hf_encode(hf_albert, texts)["input_ids"]
    assert sum(map(len, ours)) > 5000  # the comparison is not vacuous
    for text, a, b in zip(texts, ours, ref):
        assert a == b, repr(text)


def test_offsets_and_word_ids_match_hf(albert_tok, hf_albert, albert_held_out_lines):
    texts = albert_held_out_lines[400:600] + MIXED_CORPUS + EDGE_CASES
    ids, starts, ends = (t.to_list() for t in albert_tok.tokenize_with_offsets(tf.constant(texts)))
    plain_ids, word_ids = (t.to_list() for t in albert_tok.tokenize_words(tf.constant(texts)))
    assert ids == plain_ids  # the offsets path (SentencepieceTokenizer) and the fast path agree
    ref = hf_encode(hf_albert, texts)
    for i, text in enumerate(texts):
        assert ids[i] == ref["input_ids"][i], repr(text)
        assert list(zip(starts[i], ends[i])) == kbert_offsets(text, ref["offset_mapping"][i]), repr(text)
        assert word_ids[i] == ref.word_ids(i), repr(text)


# Ids 5 on; the scores make each segmentation below the only best one.
TINY = [("▁", -3), ("▁the", -1), ("▁cat", -1), ("s", -2), ("▁sat", -1), ('▁"', -1), ('"', -2), ("▁fi", -1.5),
        ("fi", -2), ("ne", -2)] + [(c, -4) for c in "acefhint"]


def test_tiny_model_hand_checked():
    tok = SentencePieceTokenizer(tiny_model(TINY))
    text = "The ``Cats'' sat \ufb01ne"  # normalised: 'the "cats" sat fine' (NFKD turns the ligature into "fi")
    ids, starts, ends = (t.numpy().tolist() for t in tok.tokenize_with_offsets(text))
    assert [tok.id_to_token(i) for i in ids] == ["▁the", '▁"', "c", "a", "t", "s", '"', "▁sat", "▁fi", "ne"]
    assert tok(text).numpy().tolist() == ids == [6, 10, 16, 15, 22, 8, 11, 9, 12, 14]
    # A quote pair's '"' covers both its characters; "▁fi" covers the ligature, "ne" what follows it.
    assert [text[a:b] for a, b in zip(starts, ends)] == ["The", "``", "C", "a", "t", "s", "''", "sat", "\ufb01", "ne"]
    assert tok.tokenize_words(text)[1].numpy().tolist() == [0, 1, 1, 1, 1, 1, 1, 2, 3, 3]
    assert tok.detokenize([ids]).numpy().tolist() == [b'the "cats" sat fine']
    # "e" alone: the lone "▁" piece covers its word's first character; an unknown one is <unk>.
    ids, starts, ends = (t.numpy().tolist() for t in tok.tokenize_with_offsets("  e\u00a0\x00Z"))
    assert ids == [5, 17, 5, 1] and list(zip(starts, ends)) == [(2, 3), (2, 3), (4, 5), (4, 6)]
    # Keeping accents, this model's tables delete nothing: quote pairs are then found with array operations
    # instead of being written over with a deleted character; both give the same.
    kept = SentencePieceTokenizer(tiny_model(TINY), strip_accents=False)
    assert kept._normalizer.pair_marker is None and tok._normalizer.pair_marker is not None
    texts = tf.constant(["The ``Cats'' sat", "```" + "'''x", "''", "x ``"])
    assert [t.to_list() for t in kept.tokenize_with_offsets(texts)] == [
        t.to_list() for t in tok.tokenize_with_offsets(texts)]
    assert kept(texts).to_list() == tok(texts).to_list()


def test_quote_pairs_keep_both_characters():
    """The '"' of "``" or "''" covers both characters (HF's only the second): a word in quotes, a tagged
    word or an answer span, keeps its first quote; a lone "▁" before it covers the pair too."""
    tok = SentencePieceTokenizer(tiny_model(TINY))
    texts = ["the ``Cat''  sat", "```the" + "'''", "``'' `` ''", "''\u00e9''", "sat'' `` '"]
    ids, starts, ends = (t.to_list() for t in tok.tokenize_with_offsets(tf.constant(texts)))
    assert tok(tf.constant(texts)).to_list() == ids  # the fast route, which finds pairs another way
    pieces = [[tok.id_to_token(i) for i in row] for row in ids]
    spans = [[t[a:b] for a, b in zip(s, e)] for t, s, e in zip(texts, starts, ends)]
    assert pieces[0] == ["▁the", '▁"', "c", "a", "t", '"', "▁sat"]
    assert spans[0] == ["the", "``", "C", "a", "t", "''", "sat"] and (starts[0][1], ends[0][5]) == (4, 11)
    # Of three, the first two pair; the third is a character of its own (unknown to this model).
    assert pieces[1] == ['▁"', "<unk>", "t", "h", "e", '"', "<unk>"]
    assert spans[1] == ["``", "`", "t", "h", "e", "''", "'"]
    assert spans[2] == ["``", "''", "``", "''"] and spans[3] == ["''", "\u00e9", "''"]
    assert spans[4] == ["sat", "''", "``", "'", "'"]  # a lone "'" is no pair: "▁" and <unk> cover it
    # Without a '"' piece of its own a quoted word starts with a lone "▁", which covers the pair as its '"' does.
    bare = SentencePieceTokenizer(tiny_model([p for p in TINY if p[0] != '▁"']))
    ids, starts, ends = (t.numpy().tolist() for t in bare.tokenize_with_offsets("the ``cat"))
    assert [bare.id_to_token(i) for i in ids] == ["▁the", "▁", '"', "c", "a", "t"]
    assert list(zip(starts, ends)) == [(0, 3), (4, 6), (4, 6), (6, 7), (7, 8), (8, 9)]


def test_offsets_after_deleted_leading_characters(albert_tok, hf_albert):
    """HF's alignment loses what its character map deletes before the first character it keeps; kbert's
    offsets cover the piece's own characters (HF's for the text without that start, moved by its length)."""
    ids, starts, ends = (t.numpy().tolist() for t in albert_tok.tokenize_with_offsets("\x01\x7fthe"))
    ref = hf_encode(hf_albert, ["\x01\x7fthe", "the"])
    assert ids == ref["input_ids"][0] == ref["input_ids"][1]
    assert ref["offset_mapping"][0][0] == (0, 3) and ref["offset_mapping"][1][0] == (0, 3)
    assert (starts[0], ends[-1]) == (2, 5)


@pytest.mark.parametrize("sequence_length,truncate,hf_truncation", [
    (256, "round_robin", False),  # no truncation
    (24, "waterfall", "only_second"),  # the first segment kept whole (short ones are picked), the second cut
])
def test_pairs_through_preprocessor_match_hf(albert_tok, hf_albert, albert_held_out_lines, sequence_length, truncate,
                                             hf_truncation):
    lengths = albert_tok(tf.constant(albert_held_out_lines)).row_lengths().numpy()
    first = [t for t, n in zip(albert_held_out_lines, lengths) if n < 10][:32]
    second = albert_held_out_lines[600:632]
    pre = BertPreprocessor(albert_tok, sequence_length=sequence_length, truncate=truncate)
    out = pre.call_with_offsets((tf.constant(first), tf.constant(second)))
    ref = hf_albert(first, second, padding="max_length", truncation=hf_truncation, max_length=sequence_length,
                    return_offsets_mapping=True, return_token_type_ids=True, split_special_tokens=True)
    assert out["token_ids"].numpy().tolist() == ref["input_ids"]
    assert out["segment_ids"].numpy().tolist() == ref["token_type_ids"]
    assert out["padding_mask"].numpy().astype(int).tolist() == ref["attention_mask"]
    offsets = np.stack([out["start_offsets"], out["end_offsets"]], -1).tolist()
    texts = (first, second)
    assert offsets == [[list(kbert_offsets(texts[s][i], [o])[0]) if s is not None else list(o)
                        for s, o in zip(ref.sequence_ids(i), row)] for i, row in enumerate(ref["offset_mapping"])]
    words = [[-1 if w is None else w for w in ref.word_ids(i)] for i in range(len(first))]
    assert out["word_ids"].numpy().tolist() == words
    assert ref["input_ids"][0][0] == albert_tok.cls_token_id == 2 and albert_tok.sep_token_id in ref["input_ids"][0]
    assert sum(row.count(0) for row in ref["input_ids"]) > 0  # padding is compared too


def test_special_ids_vocabulary_and_detokenize(albert_tok):
    tok = albert_tok
    assert (tok.pad_token_id, tok.unk_token_id, tok.cls_token_id, tok.sep_token_id, tok.mask_token_id) == (
        0, 1, 2, 3, 4)
    assert tok.vocabulary_size() == len(tok.get_vocabulary()) <= 1000 and tok.id_to_token(2) == "[CLS]"
    assert tok.token_to_id("▁the") == tok.get_vocabulary().index("▁the")
    with pytest.raises(KeyError, match="nope"):
        tok.token_to_id("nope")
    with pytest.raises(IndexError, match="outside"):
        tok.id_to_token(tok.vocabulary_size())
    ids = tok(["The  Quick, brown fox.", ""])
    assert tok.detokenize(ids).numpy().tolist() == [b"the quick, brown fox.", b""]
    assert tok.detokenize(ids.to_tensor()).numpy().tolist()[0] == b"the quick, brown fox."  # padding dropped


def test_input_shapes_and_special_token_text(albert_tok):
    texts = ["the file", "", "   ", "[SEP] [CLS]"]
    want = albert_tok(texts).to_list()
    assert want[1] == want[2] == [] and albert_tok.sep_token_id not in want[3]  # text, not the separator
    assert albert_tok(tf.constant(texts)[:, tf.newaxis]).to_list() == want
    scalar = albert_tok("the file")
    assert isinstance(scalar, tf.Tensor) and scalar.numpy().tolist() == want[0]
    ids, starts, ends = albert_tok.tokenize_with_offsets("the file")
    assert ids.numpy().tolist() == want[0] and starts.shape == ends.shape == ids.shape
    assert albert_tok.tokenize_words("the file")[1].numpy().tolist()[-1] == 1
    assert albert_tok(tf.constant([], tf.string)).to_list() == []
    with pytest.raises(ValueError, match="scalar or 1-D"):
        albert_tok(tf.constant([[["a"]]]))


def test_graph_tf_data_config_and_directory_round_trip(albert_tok, tmp_path):
    texts = ["The Zipfile module.", "Ünïcödé ``text''!"]
    eager = albert_tok(texts).to_list()
    graph = tf.function(lambda x: albert_tok(x).to_tensor(-1), input_signature=[tf.TensorSpec([None], tf.string)])
    assert [[i for i in row if i >= 0] for row in graph(tf.constant(texts)).numpy().tolist()] == eager
    ds = tf.data.Dataset.from_tensor_slices(texts).map(albert_tok)
    assert [x.tolist() for x in ds.as_numpy_iterator()] == eager
    config = json.loads(json.dumps(albert_tok.get_config()))  # plain data
    clone = SentencePieceTokenizer.from_config(config)
    assert clone(texts).to_list() == eager and (clone.lowercase, clone.strip_accents) == (True, True)
    pre = BertPreprocessor(albert_tok, sequence_length=12)
    packed = BertPreprocessor.from_config(json.loads(json.dumps(pre.get_config())))((texts, texts[::-1]))
    assert packed["token_ids"].numpy().tolist() == pre((texts, texts[::-1]))["token_ids"].numpy().tolist()
    albert_tok.save_vocabulary(tmp_path)
    assert json.loads((tmp_path / "tokenizer_config.json").read_text())["keep_accents"] is False
    assert load_tokenizer(tmp_path)(texts).to_list() == eager


def test_saved_model_needs_no_model_file(albert_dir, tmp_path):
    path = tmp_path / "spiece.model"
    path.write_bytes((albert_dir / "spiece.model").read_bytes())
    tok = SentencePieceTokenizer(str(path))
    module = tf.Module()
    module.tok = tok
    module.f = tf.function(lambda x: tok(x).to_tensor(), input_signature=[tf.TensorSpec([None], tf.string)])
    module.g = tf.function(lambda x: tok.tokenize_with_offsets(x)[1].to_tensor(),
                           input_signature=[tf.TensorSpec([None], tf.string)])
    want = module.f(tf.constant(["the file object"])).numpy().tolist()
    tf.saved_model.save(module, str(tmp_path / "sm"))
    path.unlink()
    restored = tf.saved_model.load(str(tmp_path / "sm"))
    assert restored.f(tf.constant(["the file object"])).numpy().tolist() == want
    assert restored.g(tf.constant(["the file"])).numpy().tolist()[0][-1] == 4


def test_cased_and_accented_settings_match_hf(albert_dir, tmp_path, albert_held_out_lines):
    (tmp_path / "spiece.model").write_bytes((albert_dir / "spiece.model").read_bytes())
    (tmp_path / "tokenizer_config.json").write_text(json.dumps(
        {"tokenizer_class": "AlbertTokenizer", "do_lower_case": False, "keep_accents": True}))
    tok = load_tokenizer(tmp_path)
    assert (tok.lowercase, tok.strip_accents) == (False, False)
    # Not text with combining marks after a letter: HF composes those when accents are kept (documented).
    texts = [t for t in albert_held_out_lines[:100] + MIXED_CORPUS + EDGE_CASES[:-2] if "\u0301" not in t]
    ref = hf_encode(hf_albert_tokenizer(tmp_path), texts)
    ids, starts, ends = (t.to_list() for t in tok.tokenize_with_offsets(tf.constant(texts)))
    assert tok(tf.constant(texts)).to_list() == ref["input_ids"] == ids
    assert [list(zip(s, e)) for s, e in zip(starts, ends)] == [kbert_offsets(t, r) for t, r in zip(
        texts, ref["offset_mapping"])]


def test_invalid_utf8_reads_as_replacement_characters(albert_tok, hf_albert):
    bad = [b"caf\xc3 \xff\xfebad\x80 ok", b"\xc3\x28", b"\xed\xa0\x80x", b"\xf4\x90\x80\x80z", b"a\xf0\x9f\x98",
           b"\xff``a''\xc3"]
    text = [b.decode("utf-8", "replace") for b in bad]  # one U+FFFD per invalid sequence, as TensorFlow reads it
    ids, starts, ends = albert_tok.tokenize_with_offsets(tf.constant(bad))
    ref = hf_encode(hf_albert, text)
    assert ids.to_list() == ref["input_ids"] == albert_tok(tf.constant(bad)).to_list()
    assert [list(zip(s, e)) for s, e in zip(starts.to_list(), ends.to_list())] == [
        kbert_offsets(t, row) for t, row in zip(text, ref["offset_mapping"])]
    # nmt_nfkc makes U+FFFD a space: invalid bytes split words.
    assert ids.to_list()[0] == albert_tok(["caf bad ok"]).to_list()[0] != albert_tok(["cafbad ok"]).to_list()[0]


def test_bad_models_and_files_are_named(albert_dir, tmp_path):
    with pytest.raises(ValueError, match="not a SentencePiece model"):
        SentencePieceTokenizer(b"\x0a\xff\xff")
    with pytest.raises(FileNotFoundError, match="nope.model"):
        SentencePieceTokenizer(str(tmp_path / "nope.model"))
    with pytest.raises(FileNotFoundError, match="spiece.model or vocab.txt"):
        load_tokenizer(tmp_path)
    spm = pytest.importorskip("sentencepiece")
    corpus = tmp_path / "c.txt"
    corpus.write_text("the cat sat on the mat\nthe dog ran\n" * 50)
    for extra, message in [({"model_type": "bpe"}, "type is 2"), ({}, r"<pad>, \[CLS\], \[SEP\]")]:
        spm.SentencePieceTrainer.train(input=str(corpus), model_prefix=str(tmp_path / "m"), vocab_size=30,
                                       hard_vocab_limit=False, minloglevel=2, **extra)
        with pytest.raises(ValueError, match=message):
            SentencePieceTokenizer(str(tmp_path / "m.model"))


def test_load_tokenizer_picks_the_tokenizer_by_files(albert_dir, tmp_path, tiny_vocab_file):
    model = (albert_dir / "spiece.model").read_bytes()
    chinese = tmp_path / "albert_chinese"  # a Chinese ALBERT ships vocab.txt: BERT's WordPiece
    chinese.mkdir()
    (chinese / "vocab.txt").write_text(tiny_vocab_file.read_text())
    (chinese / "config.json").write_text(json.dumps({"model_type": "albert"}))
    assert type(load_tokenizer(chinese)).__name__ == "BertTokenizer"
    (chinese / "spiece.model").write_bytes(model)  # both: the first row of TOKENIZER_FILES, spiece.model
    assert type(load_tokenizer(chinese)).__name__ == "SentencePieceTokenizer"
    renamed = tmp_path / "albert.model"
    renamed.write_bytes(model)
    tok = load_tokenizer(renamed, lowercase=False)
    assert type(tok).__name__ == "SentencePieceTokenizer" and not tok.lowercase and tok.strip_accents
    with pytest.raises(ValueError, match="albert.model.*not a SentencePiece model"):
        renamed.write_bytes(b"\x0a\xff\xff")
        load_tokenizer(renamed)


def test_scores_of_an_hf_tokenizer_json_are_used(albert_dir, tmp_path, hf_albert):
    """transformers 5 takes the scores of `tokenizer.json` (its ALBERT converter lowers pieces like "1,")."""
    hf_albert.save_pretrained(str(tmp_path))  # transformers 5 writes tokenizer.json, not spiece.model
    (tmp_path / "spiece.model").write_bytes((albert_dir / "spiece.model").read_bytes())
    tokenizer_json = json.loads((tmp_path / "tokenizer.json").read_text(encoding="utf-8"))
    vocab = tokenizer_json["model"]["vocab"]
    the = [piece for piece, _ in vocab].index("▁the")
    vocab[the][1] -= 100
    (tmp_path / "tokenizer.json").write_text(json.dumps(tokenizer_json), encoding="utf-8")
    texts = ["the file is the one", "Then the other"]
    ref = hf_albert_tokenizer(tmp_path)(texts, add_special_tokens=False)["input_ids"]
    ours = load_tokenizer(tmp_path)(texts).to_list()
    assert ours == ref and the not in sum(ours, []) and the in sum(load_tokenizer(albert_dir)(texts).to_list(), [])
