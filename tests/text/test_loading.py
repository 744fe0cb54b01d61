"""load_tokenizer on HF, Google and kbert directories, and its errors."""

import json

import pytest

from kbert.text import load_tokenizer

VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat"]


def write_dir(path, vocab=VOCAB, config=None, files=()):
    path.mkdir(parents=True, exist_ok=True)
    (path / "vocab.txt").write_text("\n".join(vocab) + "\n", encoding="utf-8")
    if config is not None:
        (path / "tokenizer_config.json").write_text(json.dumps(config))
    for name in files:
        (path / name).write_text("{}")
    return path


def test_hf_dir_reads_do_lower_case(tmp_path):
    cased = load_tokenizer(write_dir(tmp_path / "a", config={"do_lower_case": False}))
    assert not cased.lowercase and cased(["The cat"]).to_list() == [[1, 6]]
    default = load_tokenizer(write_dir(tmp_path / "b", config={}))
    assert default.lowercase and default(["The cat"]).to_list() == [[5, 6]]


@pytest.mark.parametrize("name,lowercase", [("cased_L-12_H-768_A-12", False),
                                            ("uncased_L-12_H-768_A-12", True), ("my_bert", True)])
def test_google_dir_casing_from_name(tmp_path, name, lowercase):
    tok = load_tokenizer(write_dir(tmp_path / name, files=["bert_config.json"]))
    assert tok.lowercase is lowercase


def test_google_casing_from_checkpoint_name(tmp_path):
    path = write_dir(tmp_path / "ckpt", files=["bert_config.json", "bert_model_cased.ckpt.index"])
    assert load_tokenizer(path).lowercase is False


def test_minilm_is_uncased(minilm):
    tok = load_tokenizer(minilm)
    assert tok.lowercase and tok.vocabulary_size() == 30522 and tok.cls_token_id == 101


def test_missing_vocab_names_the_path(tmp_path):
    with pytest.raises(FileNotFoundError, match="vocab.txt"):
        load_tokenizer(tmp_path)


def test_missing_special_token_is_named(tmp_path):
    path = write_dir(tmp_path / "x", vocab=["[PAD]", "[UNK]", "[SEP]", "a"])
    with pytest.raises(ValueError, match=r"\[CLS\]"):
        load_tokenizer(path)


def test_vocab_json_and_merges_give_a_byte_level_bpe(bpe_dir, tmp_path):
    tok = load_tokenizer(bpe_dir)
    assert type(tok).__name__ == "ByteLevelBpeTokenizer" and not tok.add_prefix_space
    assert (tok.cls_token_id, tok.pad_token_id, tok.sep_token_id, tok.mask_token_id) == (0, 1, 2, 999)
    copy = tmp_path / "roberta"
    copy.mkdir()
    for name in ("vocab.json", "merges.txt"):
        (copy / name).write_bytes((bpe_dir / name).read_bytes())
    (copy / "tokenizer_config.json").write_text(json.dumps({"add_prefix_space": True}))
    assert load_tokenizer(copy / "vocab.json").add_prefix_space
    with pytest.raises(ValueError, match="no casing"):
        load_tokenizer(copy, lowercase=True)
    write_dir(copy)  # a vocab.txt as well: WordPiece, as before
    assert type(load_tokenizer(copy)).__name__ == "BertTokenizer"


def test_missing_vocabulary_names_every_layout(tmp_path):
    (tmp_path / "vocab.json").write_text("{}")
    with pytest.raises(FileNotFoundError, match="a byte-level BPE vocabulary without its merges.txt"):
        load_tokenizer(tmp_path)
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError, match=r"no tokenizer file \(spiece.model or vocab.txt or vocab.json\)"):
        load_tokenizer(tmp_path / "empty")
