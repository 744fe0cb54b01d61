"""Fixtures: a small ALBERT SentencePiece model learned from Python's docstrings, and HF's tokenizer for it."""

import pytest
from albert_reference import OTHER_SCRIPTS, TRAIN_MODULES, docstring_lines, hf_albert_tokenizer


@pytest.fixture(scope="session")
def albert_dir(tmp_path_factory):
    """spiece.model (Unigram, at most 1000 pieces, ALBERT's specials at 0-4) and tokenizer_config.json."""
    from kbert.text.sentencepiece_tokenizer import SentencePieceTokenizer
    from kbert.text.sentencepiece_vocabulary import learn_sentencepiece

    directory = tmp_path_factory.mktemp("albert")
    corpus = directory / "corpus.txt"
    corpus.write_text("\n".join(docstring_lines(TRAIN_MODULES) + OTHER_SCRIPTS * 3) + "\n", encoding="utf-8")
    proto = learn_sentencepiece([corpus], size=1000, character_coverage=1.0, verbose=False)
    corpus.unlink()
    SentencePieceTokenizer(proto).save_vocabulary(directory)
    return directory


@pytest.fixture(scope="session")
def held_out_lines():
    from albert_reference import HELD_OUT_MODULES

    return docstring_lines(HELD_OUT_MODULES)


@pytest.fixture(scope="session")
def hf_albert(albert_dir):
    return hf_albert_tokenizer(albert_dir)


@pytest.fixture(scope="session")
def albert_tok(albert_dir):
    from kbert.text import load_tokenizer

    return load_tokenizer(albert_dir)
