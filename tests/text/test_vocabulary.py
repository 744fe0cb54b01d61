"""learn_vocabulary and `kbert vocab`: layout, CJK characters, round trip on a generated corpus."""

import random

import pytest

from kbert.text import BertTokenizer, learn_vocabulary

WORDS = ["apple", "banana", "cherry", "river", "mountain", "running", "jumped", "quickly", "forest", "ocean"]
CJK = "我爱北京天安门今天很好"


@pytest.fixture
def corpus(tmp_path):
    rng = random.Random(0)
    lines = []
    for _ in range(300):
        words = [rng.choice(WORDS) for _ in range(8)]
        lines.append(" ".join(words).capitalize() + "，" + "".join(rng.sample(CJK, 3)) + "。")
    path = tmp_path / "corpus.txt"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_learned_vocabulary_round_trips(corpus):
    vocab = learn_vocabulary([corpus], size=200, lowercase=True, verbose=False)
    assert vocab[:5] == ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    assert len(vocab) <= 200 and len(set(vocab)) == len(vocab)
    for char in CJK + "，。":
        assert char in vocab
    tok = BertTokenizer(vocab)
    for word in WORDS:
        ids = tok([word]).to_list()[0]
        assert tok.unk_token_id not in ids
        assert "".join(vocab[i].removeprefix("##") for i in ids) == word
    assert tok.detokenize(tok(["River quickly"])).numpy().tolist() == [b"river quickly"]


def test_cli_writes_vocab(corpus, tmp_path):
    from kbert.cli.main import main

    out = tmp_path / "out" / "vocab.txt"
    assert main(["vocab", "--input", str(corpus), "--size", "150", "--out", str(out),
                 "--lowercase", "--quiet"]) == 0
    lines = out.read_text(encoding="utf-8").splitlines()
    assert lines[:5] == ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] and "river" in lines


def test_missing_input_file(tmp_path):
    with pytest.raises(FileNotFoundError, match="nope.txt"):
        learn_vocabulary([tmp_path / "nope.txt"], size=100, verbose=False)
