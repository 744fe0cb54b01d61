"""Text and a reference for the ALBERT SentencePiece tests: Python's own docstrings, and HF's AlbertTokenizer.

`tests/text/conftest.py` learns a small model from the docstrings of `TRAIN_MODULES` (plus a few lines of
other scripts); `HELD_OUT_MODULES` give text that the model never saw.
"""

import contextlib
import importlib
import inspect
import json
import pathlib
import re
import struct
from unittest import mock

import pytest

TRAIN_MODULES = ["collections", "json", "email", "argparse", "logging", "unittest", "typing", "asyncio", "pathlib",
                 "datetime", "os", "re", "string", "textwrap", "functools", "itertools"]
HELD_OUT_MODULES = ["inspect", "tarfile", "zipfile", "sqlite3", "decimal", "fractions", "statistics", "csv"]
# Some text in other scripts, so that the model has pieces beyond ASCII.
OTHER_SCRIPTS = ["Café naïve résumé Ångström Straße İstanbul façade", "我爱北京天安门。今天天气很好。",
                 "日本語のテキストです。カタカナとひらがな。", "한국어 텍스트입니다. 안녕하세요!",
                 "Привет мир! Греческий: Γειά σου Κόσμε", "Ünïcödé äccents ÀÉÎÕÜ ñ ç — “quotes” «guillemets»"]
MIXED_CORPUS = json.loads((pathlib.Path(__file__).parent / "text" / "mixed_corpus.json").read_text(encoding="utf-8"))


def docstring_lines(module_names: list[str]) -> list[str]:
    """The non-empty docstring lines of the modules' members, each once, in order."""
    lines = []
    for name in module_names:
        module = __import__(name)
        for _, member in inspect.getmembers(module):
            doc = inspect.getdoc(member)
            if doc:
                lines += [line.strip() for line in doc.splitlines() if line.strip()]
    return list(dict.fromkeys(lines))


@contextlib.contextmanager
def _protobuf_for_transformers():
    """sentencepiece's generated `sentencepiece_model_pb2` may need a newer protobuf than TensorFlow pins; then
    point transformers at its own copy of the module (what it uses when sentencepiece is not installed)."""
    convert_slow_tokenizer = importlib.import_module("transformers.convert_slow_tokenizer")
    sentencepiece_model_pb2_new = importlib.import_module("transformers.utils.sentencepiece_model_pb2_new")

    try:
        convert_slow_tokenizer.import_protobuf()
        own = convert_slow_tokenizer.import_protobuf
    except Exception:  # the protobuf runtime refuses the generated module
        own = lambda *_: sentencepiece_model_pb2_new  # noqa: E731
    with mock.patch.object(convert_slow_tokenizer, "import_protobuf", own):
        yield


def hf_albert_tokenizer(directory) -> "transformers.PreTrainedTokenizerBase":  # noqa: F821
    """transformers' tokenizer of the directory, as `AutoTokenizer.from_pretrained` gives it."""
    transformers = pytest.importorskip("transformers")
    with _protobuf_for_transformers():
        tokenizer = transformers.AutoTokenizer.from_pretrained(str(directory))
    assert type(tokenizer).__name__ == "AlbertTokenizer" and tokenizer.is_fast
    return tokenizer


def hf_encode(hf, texts: list[str]):
    """HF's ids, offsets and word ids, with text like "[SEP]" read as text (as kbert reads it)."""
    return hf(texts, add_special_tokens=False, return_offsets_mapping=True, split_special_tokens=True)


def kbert_offsets(text: str, offsets) -> list[tuple[int, int]]:
    """HF's character offsets of `text` as kbert gives them: a piece that starts at the second character of a
    quote pair ("``" or "''", paired left to right) starts at the first (kbert's '"' covers both; HF's loses
    the first, which step 1 deletes)."""
    seconds = {m.start() + 1 for m in re.finditer("``|''", text)}
    return [(a - 1 if a in seconds else a, b) for a, b in map(tuple, offsets)]


def tiny_model(pieces: list[tuple[str, float]], charsmap: bytes = b"") -> bytes:
    """A hand-written SentencePiece Unigram model: ALBERT's five specials, then `pieces` (text, score)."""
    from kbert.text import sentencepiece_model as sm

    def piece(text, score, kind=sm.NORMAL):
        return sm.encode([(sm.PIECE_TEXT, sm.LENGTH, text.encode()),
                          (sm.PIECE_SCORE, sm.FIXED32, struct.pack("<f", score)), (sm.PIECE_TYPE, sm.VARINT, kind)])

    specials = [piece("<pad>", 0, sm.CONTROL), piece("<unk>", 0, sm.UNKNOWN)] + [
        piece(t, 0, sm.CONTROL) for t in ("[CLS]", "[SEP]", "[MASK]")]
    trainer = sm.encode([(sm.MODEL_TYPE, sm.VARINT, sm.UNIGRAM), (40, sm.VARINT, 1)])  # unk_id 1
    normalizer = sm.encode([(sm.NORMALIZER_NAME, sm.LENGTH, b"identity"), (sm.CHARSMAP, sm.LENGTH, charsmap)])
    return sm.encode([(sm.PIECES, sm.LENGTH, p) for p in specials + [piece(t, s) for t, s in pieces]] + [
        (sm.TRAINER_SPEC, sm.LENGTH, trainer), (sm.NORMALIZER_SPEC, sm.LENGTH, normalizer)])
