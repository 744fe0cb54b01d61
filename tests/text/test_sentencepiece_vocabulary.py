"""learn_sentencepiece and `kbert vocab --kind sentencepiece`: ALBERT's layout, the tokenizer's normalisation,
URLs, and a model that kbert and transformers both load."""

import random

import pytest
from albert_reference import hf_albert_tokenizer

import kbert.file_io as file_io
from kbert.text import SentencePieceTokenizer, load_tokenizer
from kbert.text.sentencepiece_vocabulary import learn_sentencepiece

WORDS = ["Apple", "BANANA", "Cherry", "river", "mountain", "running", "jumped", "quickly", "forest", "Océan", "naïve",
         "``quoted''", "1,000"]


@pytest.fixture
def corpus(tmp_path):
    rng = random.Random(0)
    lines = [" ".join(rng.choice(WORDS) for _ in range(8)) for _ in range(400)]
    path = tmp_path / "corpus.txt"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_cli_writes_a_model_that_kbert_and_transformers_load(corpus, tmp_path):
    from kbert.cli.main import main

    url = "ram://kbert-spm-test/corpus.txt"  # any tf.io.gfile path, read through kbert.file_io
    file_io.write_bytes(url, corpus.read_bytes())
    out = tmp_path / "out"
    assert main(["vocab", "--kind", "sentencepiece", "--input", url, "--size", "120", "--out", str(out),
                 "--lowercase", "--quiet"]) == 0
    tok = load_tokenizer(out)
    assert isinstance(tok, SentencePieceTokenizer) and tok.lowercase and tok.strip_accents
    assert tok.get_vocabulary()[:5] == ["<pad>", "<unk>", "[CLS]", "[SEP]", "[MASK]"] and tok.vocabulary_size() <= 120
    texts = ["Apple river, quickly", "Océan ``quoted'' NAÏVE"]
    assert tok(texts).to_list() == hf_albert_tokenizer(out)(texts, add_special_tokens=False)["input_ids"]
    assert tok.unk_token_id not in sum(tok(texts).to_list(), [])
    assert main(["vocab", "--kind", "sentencepiece", "--input", url, "--size", "120", "--out",
                 "ram://kbert-spm-test/model", "--quiet"]) == 0  # the output may be a URL too
    assert not load_tokenizer("ram://kbert-spm-test/model").lowercase


def test_the_model_learns_normalised_text(corpus):
    uncased = SentencePieceTokenizer(learn_sentencepiece([corpus], 120, verbose=False))
    pieces = "".join(uncased.get_vocabulary()[5:])
    assert pieces == pieces.lower() and "é" not in pieces and "``" not in pieces and '"' in pieces
    cased = learn_sentencepiece([corpus], 120, lowercase=False, strip_accents=False, verbose=False)
    pieces = "".join(SentencePieceTokenizer(cased, lowercase=False, strip_accents=False).get_vocabulary())
    assert "A" in pieces and "é" in pieces


def test_bad_inputs_are_named(corpus, tmp_path):
    with pytest.raises(FileNotFoundError, match="nope.txt"):
        learn_sentencepiece([tmp_path / "nope.txt"], 100, verbose=False)
    with pytest.raises(ValueError, match="size must exceed"):
        learn_sentencepiece([corpus], 5, verbose=False)
    latin1 = tmp_path / "latin1.txt"
    latin1.write_bytes("caf\u00e9 river\n".encode("latin-1") * 5)
    with pytest.raises(ValueError, match=r"latin1\.txt:1: not valid UTF-8"):
        learn_sentencepiece([latin1], 50, verbose=False, encoding_errors="strict")
