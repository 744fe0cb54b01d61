"""Exports in TFLite through TensorFlow select ops (`kbert export --tflite --select-tf-ops`): RoBERTa's every
task, ALBERT's tagging and QA.

RoBERTa's byte-level BPE needs regular expressions and string ops that LiteRT's built-ins and tensorflow-text's
kernels lack (docs/investigations/byte-level-bpe.md); ALBERT's SentencePiece twin for LiteRT has no offsets, which
tagging and QA need. With the flag, the tokenizer's ops stay TensorFlow (Flex) ops. No runtime in kbert's stack
runs those: LiteRT's Python package and TensorFlow since 2.19 ship without the Flex delegate, so `kbert predict`
refuses such a file by name. The answers are compared with the SavedModel's under a Python whose TensorFlow still
links it (`KBERT_FLEX_PYTHON`, e.g. a venv with tensorflow-cpu 2.18 and, for ALBERT's ops, tensorflow-text 2.18);
without one that test is skipped.
"""

from __future__ import annotations

import base64
import json
import os
import pathlib
import subprocess

import keras
import numpy as np
import pytest
import tensorflow as tf

import kbert
from kbert.cli.main import main
from kbert.export import ExportSource, export
from kbert.export.tflite import flex_ops, interpreter
from kbert.tasks import (ClassificationTask, EmbeddingTask, EncoderTask, QuestionAnsweringTask, RegressionTask,
                         TaggingTask)
from kbert.text.sentencepiece_vocabulary import learn_sentencepiece
from tests.export.fuzz_inputs import one_text
from tests.family_checkpoints import bpe_files

SEQ = 32
FLEX_PYTHON = os.environ.get("KBERT_FLEX_PYTHON")
# Held out from what the BPE learns: contractions, repeated and trailing white space, accents, CJK, emoji,
# digits, CamelCase and an empty text.
TEXTS = ["The cat's mat, isn't it?", "  two  spaces and a tab\there ", "Café naïve résumé",
         "日本語のテキスト", "emoji 🙂👍🏽 end ", "digits 12345 and CamelCaseName", "", "we'll say   \n  so !!"]
QUESTIONS = ["who sat?", "where", "Café?", "", "what ran ", "digits?", "日本", "so"]
LEARNED = ["the cat sat on the mat", "a dog ran over the hill", "cafe and naive words", "who said so , and where ?"]


def roberta_sources(root: pathlib.Path) -> dict[str, ExportSource]:
    """A tiny random RoBERTa model per task, with a byte-level BPE learned from `LEARNED`."""
    bpe = root / "bpe"
    bpe.mkdir()
    bpe_files(bpe, LEARNED * 8, size=280)
    tok = kbert.ByteLevelBpeTokenizer(bpe / "vocab.json", bpe / "merges.txt")
    keras.utils.set_random_seed(3)

    def encoder():
        return kbert.RobertaEncoder(vocab_size=tok.vocabulary_size(), hidden_size=16, num_hidden_layers=2,
                                    num_attention_heads=2, intermediate_size=32, max_position_embeddings=SEQ + 4,
                                    initializer_range=0.5)

    labels, tags = ["neg", "neu", "pos"], ["O", "B-X", "I-X"]
    return {
        "classify": ExportSource(kbert.BertClassifier(encoder(), 3, dropout=0.0), tok,
                                 ClassificationTask(labels=labels), SEQ),
        "regress": ExportSource(kbert.BertClassifier(encoder(), 1, dropout=0.0), tok, RegressionTask(), SEQ),
        "tag": ExportSource(kbert.BertTokenClassifier(encoder(), len(tags), dropout=0.0), tok,
                            TaggingTask(labels=tags), SEQ),
        "qa": ExportSource(kbert.BertQuestionAnswerer(encoder(), dropout=0.0), tok, QuestionAnsweringTask(), SEQ),
        "encoder": ExportSource(encoder(), tok, EncoderTask(), SEQ),
        "embed": ExportSource(kbert.BertSentenceEmbedder(encoder(), pooling="mean"), tok,
                              EmbeddingTask(pooling="mean"), SEQ),
    }


def albert_sources(root: pathlib.Path) -> dict[str, ExportSource]:
    """ALBERT's tagging and QA with a SentencePiece model learned from `LEARNED`."""
    corpus = root / "corpus.txt"
    corpus.write_text("\n".join(LEARNED * 8) + "\n", encoding="utf-8")
    tok = kbert.SentencePieceTokenizer(learn_sentencepiece([corpus], size=60, verbose=False))
    keras.utils.set_random_seed(4)

    def encoder():
        return kbert.AlbertEncoder(vocab_size=tok.vocabulary_size(), embedding_size=8, hidden_size=16,
                                   num_hidden_layers=2, num_attention_heads=2, intermediate_size=32,
                                   max_position_embeddings=SEQ, initializer_range=0.5)

    return {"albert_tag": ExportSource(kbert.BertTokenClassifier(encoder(), 3, dropout=0.0), tok,
                                       TaggingTask(labels=["O", "B-X", "I-X"]), SEQ),
            "albert_qa": ExportSource(kbert.BertQuestionAnswerer(encoder(), dropout=0.0), tok,
                                      QuestionAnsweringTask(), SEQ)}


@pytest.fixture(scope="module")
def roberta_exports(tmp_path_factory) -> dict[str, pathlib.Path]:
    """Every RoBERTa task and ALBERT's tagging and QA exported with their TFLite files in select ops; RoBERTa's
    classify as a user would, through the CLI."""
    root = tmp_path_factory.mktemp("select_tf_ops")
    sources = roberta_sources(root)
    classify = sources.pop("classify")
    kbert.save_model(classify.model, root / "model", classify.tokenizer, classify.task, SEQ)
    assert main(["export", str(root / "model"), "--out", str(root / "classify" / "1"), "--tflite",
                 "--select-tf-ops"]) == 0
    exports = {"classify": root / "classify" / "1"}
    sources.update(albert_sources(root))
    exports.update({task: pathlib.Path(export(source, root / task / "1", tflite=True, select_tf_ops=True))
                    for task, source in sources.items()})
    return exports


def test_without_the_flag_roberta_is_refused_and_told_of_it(tmp_path):
    source = roberta_sources(tmp_path)["classify"]
    with pytest.raises(ValueError, match="--select-tf-ops") as refusal:
        export(source, tmp_path / "out" / "1", tflite=True)
    assert "ByteLevelBpeTokenizer" in str(refusal.value)
    assert not (tmp_path / "out").exists()
    with pytest.raises(ValueError, match="tflite=True"):
        export(source, tmp_path / "out" / "1", select_tf_ops=True)


@pytest.mark.parametrize("content", [b"", b"not a model", b"TFL3" * 3], ids=["empty", "text", "short"])
def test_a_file_that_is_no_tflite_model_is_named(tmp_path, capsys, content):
    path = tmp_path / "model.tflite"
    path.write_bytes(content)
    with pytest.raises(ValueError, match="not a TFLite model"):
        interpreter(path)
    assert main(["predict", str(path), "a text"]) == 1
    error = capsys.readouterr().err
    assert str(path) in error and "not a TFLite model" in error and "Traceback" not in error


@pytest.mark.slow  # eight SavedModels and their TFLite conversions: about 60 s
def test_every_task_converts_with_select_ops(roberta_exports, capsys):
    for task, path in roberta_exports.items():
        ops = flex_ops((path / "model.tflite").read_bytes())
        if task.startswith("albert"):  # tensorflow-text's SentencePiece op with offsets
            assert "SentencepieceTokenizeWithOffsetsOp" in ops, task
        else:  # GPT-2's splitting (regular expressions) and the string ops around it, as the investigation lists
            assert {"StaticRegexReplace", "StaticRegexFullMatch", "StringSplitV2", "UnicodeTranscode"} <= set(ops), task
        with pytest.raises(ValueError, match="Flex delegate"):
            interpreter(path / "model.tflite")
    capsys.readouterr()
    assert main(["predict", str(roberta_exports["classify"] / "model.tflite"), "a text"]) == 1
    error = capsys.readouterr().err
    assert "StaticRegexReplace" in error and "Traceback" not in error


def saved_answers(path: pathlib.Path, signature: str, inputs: dict[str, list[bytes]]) -> dict[str, np.ndarray]:
    function = tf.saved_model.load(str(path)).signatures[signature]
    names = function.structured_input_signature[1]
    return {k: v.numpy() for k, v in function(**{n: tf.constant(inputs[n]) for n in names}).items()}


@pytest.mark.slow  # shares the exports above; runs another Python with its own TensorFlow
@pytest.mark.skipif(not FLEX_PYTHON, reason="needs KBERT_FLEX_PYTHON: a Python whose TensorFlow (<= 2.18) links "
                                            "the Flex delegate")
def test_select_ops_files_answer_as_the_saved_model(roberta_exports, tmp_path):
    held_out = {"text": TEXTS, "text_pair": TEXTS[::-1], "question": QUESTIONS, "context": TEXTS}
    rng = np.random.default_rng(7)  # the fuzz's hostile texts (invalid UTF-8, controls, any plane), ids only
    fuzz = [one_text(rng) for _ in range(200)]
    runs = {task: (path, {k: [t.encode() for t in v] for k, v in held_out.items()})
            for task, path in roberta_exports.items()}
    runs["fuzz"] = (roberta_exports["classify"], {"text": fuzz})
    request = {"runs": {name: {"file": str(path / "model.tflite"),
                               "inputs": {k: [base64.b64encode(t).decode() for t in v] for k, v in inputs.items()}}
                        for name, (path, inputs) in runs.items()}, "out": str(tmp_path)}
    (tmp_path / "request.json").write_text(json.dumps(request), encoding="utf-8")
    ran = subprocess.run([FLEX_PYTHON, "-m", "benchmarks.studies.flex_timing", str(tmp_path / "request.json")],
                         cwd=pathlib.Path(__file__).resolve().parents[2], capture_output=True, text=True)
    assert ran.returncode == 0, ran.stderr[-3000:]
    compared = set()
    for name, (path, inputs) in runs.items():
        for answer in sorted(tmp_path.glob(f"{name}.*.npz")):
            signature = answer.name[len(name) + 1:-len(".npz")]
            saved, lite = saved_answers(path, signature, inputs), dict(np.load(answer, allow_pickle=True))
            for key, value in lite.items():  # text slices are not in the TFLite file (the caller cuts them)
                if value.dtype.kind == "f":
                    np.testing.assert_allclose(value, saved[key], atol=1e-5, err_msg=f"{name} {signature} {key}")
                else:
                    np.testing.assert_array_equal(value, saved[key], err_msg=f"{name} {signature} {key}")
                compared.add((name, signature, key))
    # Every task's answers, the spans' and tags' offsets, and the fuzz's ids were among them.
    assert {("qa", "serving_default", "start_char"), ("tag", "serving_default", "word_label"),
            ("albert_qa", "serving_default", "start_char"), ("albert_tag", "serving_default", "word_start"),
            ("fuzz", "preprocess", "token_ids")} <= compared, sorted(compared)
    assert {name for name, _, _ in compared} == set(runs)
