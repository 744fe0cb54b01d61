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


def test_bad_bytes_follow_the_encoding_policy(tmp_path):
    from kbert.text.text_files import CorpusEncodingWarning

    path = tmp_path / "latin1.txt"
    path.write_bytes(("river ocean caf\u00e9\n" * 5 + "forest\n" * 5).encode("latin-1"))
    with pytest.warns(CorpusEncodingWarning, match=r"latin1\.txt: 5 line\(s\)"):
        vocab = learn_vocabulary([path], size=60, lowercase=True, verbose=False, min_count=1)
    assert "river" in vocab and "\ufffd" not in vocab  # BERT's cleaning deletes the replacement character
    with pytest.raises(ValueError, match=r"latin1\.txt:1: not valid UTF-8"):
        learn_vocabulary([path], size=60, verbose=False, encoding_errors="strict")


def test_cli_encoding_errors_flag(tmp_path, capsys):
    from kbert.cli.main import main
    from kbert.text.text_files import CorpusEncodingWarning

    path = tmp_path / "latin1.txt"
    path.write_bytes(b"r\xe9sum\xe9 river\n" * 4)
    with pytest.warns(CorpusEncodingWarning, match="4 line.*dropped"):
        assert main(["vocab", "--input", str(path), "--size", "40", "--out", str(tmp_path / "v.txt"), "--quiet",
                     "--encoding-errors", "ignore"]) == 0
    assert "river" in (tmp_path / "v.txt").read_text(encoding="utf-8").split()
    assert main(["vocab", "--input", str(path), "--size", "40", "--out", str(tmp_path / "s.txt"), "--quiet",
                 "--encoding-errors", "strict"]) == 1
    assert "latin1.txt:1: not valid UTF-8" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["vocab", "--input", str(path), "--size", "40", "--out", str(tmp_path / "w.txt"),
              "--encoding-errors", "latin-1"])
