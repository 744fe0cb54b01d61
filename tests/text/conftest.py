"""Fixtures: a small byte-level BPE vocabulary learned by HF `tokenizers` from Python's own docs and HF's RoBERTa
tokenizer on it (the reference for `ByteLevelBpeTokenizer`); a small ALBERT SentencePiece model learned from Python's
docstrings and HF's tokenizer for it (the reference for `SentencePieceTokenizer`)."""

import importlib
import json
import pydoc

import pytest
from albert_reference import OTHER_SCRIPTS, TRAIN_MODULES as ALBERT_TRAIN_MODULES, docstring_lines, hf_albert_tokenizer

TRAIN_MODULES = ["re", "json", "collections", "argparse", "string", "textwrap"]
HELD_OUT_MODULES = ["difflib", "heapq", "csv"]


def python_docs(modules: list[str]) -> list[str]:
    """The lines of pydoc's plain-text pages of `modules`."""
    pages = [pydoc.render_doc(importlib.import_module(m), renderer=pydoc.plaintext) for m in modules]
    return "\n".join(pages).splitlines()


@pytest.fixture(scope="session")
def bpe_dir(tmp_path_factory):
    """vocab.json + merges.txt: 1000 tokens, <s> <pad> </s> <unk> = 0-3 and <mask> last, as RoBERTa's."""
    tokenizers = pytest.importorskip("tokenizers")
    path = tmp_path_factory.mktemp("bpe")
    trainer = tokenizers.ByteLevelBPETokenizer()
    trainer.train_from_iterator(python_docs(TRAIN_MODULES), vocab_size=999, min_frequency=2, show_progress=False,
                                special_tokens=["<s>", "<pad>", "</s>", "<unk>"])
    trainer.save_model(str(path))
    vocab = json.loads((path / "vocab.json").read_text(encoding="utf-8"))
    vocab["<mask>"] = len(vocab)
    (path / "vocab.json").write_text(json.dumps(vocab, ensure_ascii=False), encoding="utf-8")
    return path


@pytest.fixture(scope="session")
def hf_roberta(bpe_dir):
    """HF's RoBERTa tokenizer (fast, `tokenizers`-backed) read from the same two files."""
    transformers = pytest.importorskip("transformers")
    return transformers.RobertaTokenizer.from_pretrained(str(bpe_dir))


@pytest.fixture(scope="session")
def bpe_tok(bpe_dir):
    from kbert.text import ByteLevelBpeTokenizer

    return ByteLevelBpeTokenizer(bpe_dir / "vocab.json", bpe_dir / "merges.txt")


@pytest.fixture(scope="session")
def held_out_lines():
    """Text the vocabulary was not learned from."""
    return python_docs(HELD_OUT_MODULES)


@pytest.fixture(scope="session")
def albert_dir(tmp_path_factory):
    """spiece.model (Unigram, at most 1000 pieces, ALBERT's specials at 0-4) and tokenizer_config.json."""
    from kbert.text.sentencepiece_tokenizer import SentencePieceTokenizer
    from kbert.text.sentencepiece_vocabulary import learn_sentencepiece

    directory = tmp_path_factory.mktemp("albert")
    corpus = directory / "corpus.txt"
    corpus.write_text("\n".join(docstring_lines(ALBERT_TRAIN_MODULES) + OTHER_SCRIPTS * 3) + "\n", encoding="utf-8")
    proto = learn_sentencepiece([corpus], size=1000, character_coverage=1.0, verbose=False)
    corpus.unlink()
    SentencePieceTokenizer(proto).save_vocabulary(directory)
    return directory


@pytest.fixture(scope="session")
def albert_held_out_lines():
    from albert_reference import HELD_OUT_MODULES

    return docstring_lines(HELD_OUT_MODULES)


@pytest.fixture(scope="session")
def hf_albert(albert_dir):
    return hf_albert_tokenizer(albert_dir)


@pytest.fixture(scope="session")
def albert_tok(albert_dir):
    from kbert.text import load_tokenizer

    return load_tokenizer(albert_dir)
