"""`kbert vocab --kind bpe` and the byte-level vocabulary files: learned, written, loaded, equal to HF."""

import json

import pytest

from kbert.text import ByteLevelBpeTokenizer, load_tokenizer
from kbert.text.byte_level_vocab import learn_byte_level_bpe, read_merges, read_vocab_json


@pytest.fixture
def corpus(tmp_path, held_out_lines):
    path = tmp_path / "corpus.txt"
    path.write_text("\n".join(held_out_lines) + "\n", encoding="utf-8")
    return path


def test_cli_learns_a_vocabulary_hf_reads_alike(corpus, tmp_path, capsys):
    transformers = pytest.importorskip("transformers")
    from kbert.cli.main import main

    out = tmp_path / "out"
    assert main(["vocab", "--kind", "bpe", "--input", str(corpus), "--size", "500", "--out", str(out),
                 "--quiet"]) == 0
    assert "wrote 500 tokens" in capsys.readouterr().out
    vocab = json.loads((out / "vocab.json").read_text(encoding="utf-8"))
    assert [t for t, i in sorted(vocab.items(), key=lambda x: x[1])][:4] == ["<s>", "<pad>", "</s>", "<unk>"]
    assert vocab["<mask>"] == 499 and (out / "merges.txt").read_text().startswith("#version: 0.2\n")
    tok = load_tokenizer(out)
    assert isinstance(tok, ByteLevelBpeTokenizer) and tok.mask_token_id == 499
    hf = transformers.RobertaTokenizer.from_pretrained(str(out))
    texts = ["Find the longest matching block", "  unseen wørds, 42 of them!\n"]
    assert tok(texts).to_list() == hf(texts, add_special_tokens=False)["input_ids"]


def test_learned_files_round_trip(corpus, tmp_path):
    tokens, merges = learn_byte_level_bpe([corpus], size=400, verbose=False)
    tok = ByteLevelBpeTokenizer(tokens, merges)
    tok.save_vocabulary(tmp_path)
    assert read_vocab_json(tmp_path / "vocab.json") == tokens and read_merges(tmp_path / "merges.txt") == merges
    assert len(tokens) == 400 and len(merges) == 400 - 256 - 5


def test_bad_settings_are_named(corpus, tmp_path):
    from kbert.cli.main import main

    with pytest.raises(ValueError, match="size must be at least"):
        learn_byte_level_bpe([corpus], size=100, verbose=False)
    with pytest.raises(FileNotFoundError, match="nope.txt"):
        learn_byte_level_bpe([tmp_path / "nope.txt"], size=400, verbose=False)
    assert main(["vocab", "--kind", "bpe", "--lowercase", "--input", str(corpus), "--size", "400",
                 "--out", str(tmp_path / "x")]) != 0
