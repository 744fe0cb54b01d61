"""`kbert export --mediapipe`: MediaPipe Tasks' `TextClassifier` answers with the SavedModel's probabilities and
category names, `TextEmbedder` with its vectors; what MediaPipe cannot run is refused, saying why.

MediaPipe runs in its own process (`mediapipe_runner.py`): this Python's when it has mediapipe 1.2.2, else a
virtual environment over this one's packages with mediapipe installed into it (mediapipe's pins fit TF 2.21's,
so `pip install kbert[mediapipe]` works as well); the MediaPipe tests skip, saying why, when neither can be had.
"""

from __future__ import annotations

import dataclasses
import json
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

import kbert
from conftest import TINY_VOCAB
from kbert.cli.main import main
from kbert.export import export
from kbert.export.mediapipe_convert import MEDIAPIPE_FILE, refusal
from kbert.export.mediapipe_metadata import packed_files

sys.path.insert(0, str(pathlib.Path(__file__).parent))  # importlib mode: the helper beside us
from export_cases import SEQ, sources  # noqa: E402

MEDIAPIPE = "mediapipe==1.2.2"
RUNNER = pathlib.Path(__file__).with_name("mediapipe_runner.py")
VENV = pathlib.Path(os.environ.get("KBERT_MEDIAPIPE_VENV",
                                  pathlib.Path.home() / ".cache" / "kbert" / "mediapipe-1.2.2"))
# Lower-case ASCII, as MediaPipe's tokenizer and kbert's agree on it; an empty text; one past SEQ pieces,
# which both truncate to its first SEQ - 2 pieces.
TEXTS = ["the cats sat on the mat!", "a dog ran", "", "un affable dogs running , good ?", "The CAT, the Dog.",
         " ".join(["the", "good", "cat"] * 8)]


def mediapipe_python() -> str:
    """A Python that imports mediapipe 1.2.2: this one, or a virtual environment made for the tests."""
    check = "import mediapipe, sys; sys.exit(mediapipe.__version__ != '1.2.2')"
    for python in (sys.executable, str(VENV / "bin" / "python")):
        if os.path.exists(python) and subprocess.run([python, "-c", check], capture_output=True).returncode == 0:
            return python
    made = subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(VENV)], capture_output=True,
                          text=True)
    if made.returncode == 0:
        made = subprocess.run([str(VENV / "bin" / "python"), "-m", "pip", "install", "-q", MEDIAPIPE],
                              capture_output=True, text=True, timeout=600)
    if made.returncode != 0:
        pytest.skip(f"no Python with {MEDIAPIPE} and none could be made: {made.stderr.strip()[-300:]}")
    return str(VENV / "bin" / "python")


def run_mediapipe(api: str, model: pathlib.Path, texts: list[str]) -> list:
    request = json.dumps({"api": api, "model": str(model), "texts": texts})
    done = subprocess.run([mediapipe_python(), str(RUNNER), request], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """The classify, embed (max pooling) and encoder (mean pooling, unit length) exports, MediaPipe file in."""
    base, all_sources = tmp_path_factory.mktemp("mediapipe"), sources()
    # A random encoder's [CLS] vectors barely differ between texts: the head is scaled and centred on these
    # texts, so that their probabilities differ by percents, not saturated.
    classify = all_sources["classify"]
    logits = classify.model(kbert.BertPreprocessor(classify.tokenizer, sequence_length=SEQ)(TEXTS)).numpy()
    scale = 0.1 / np.ptp(logits, axis=0).max()  # a spread of 0.1 in the logits; more would magnify rounding
    head = classify.model.get_layer("logits")
    head.kernel.assign(head.kernel * scale)
    head.bias.assign((head.bias - logits.mean(axis=0)) * scale)
    return {task: pathlib.Path(export(all_sources[task], base / task, mediapipe=True))
            for task in ("classify", "embed", "encoder")}


def saved_model_outputs(directory: pathlib.Path, texts: list[str]) -> dict[str, np.ndarray]:
    answer = tf.saved_model.load(str(directory)).signatures["serving_default"]
    return {k: v.numpy() for k, v in answer(text=tf.constant(texts)).items()}


def test_the_file_is_what_mediapipe_reads(exported):
    """One subgraph, the three int32 (1, SEQ) inputs MediaPipe's BERT preprocessing fills, one float32 output,
    and the vocabulary and label files packed after the flatbuffer."""
    from ai_edge_litert.interpreter import Interpreter
    from tensorflow.lite.python import schema_py_generated as schema

    flat = (exported["classify"] / MEDIAPIPE_FILE).read_bytes()
    assert schema.Model.GetRootAsModel(flat, 0).SubgraphsLength() == 1
    interpreter = Interpreter(model_content=flat)
    inputs = {d["name"].split("_", 2)[-1].split(":")[0]: d for d in interpreter.get_input_details()}
    assert sorted(inputs) == ["ids", "mask", "segment_ids"]
    assert all(list(d["shape"]) == [1, SEQ] and d["dtype"] == np.int32 for d in inputs.values())
    (output,) = interpreter.get_output_details()
    assert list(output["shape"]) == [1, 3] and output["dtype"] == np.float32
    files = packed_files(flat)
    assert files["vocab.txt"].decode().splitlines() == TINY_VOCAB
    assert files["labels.txt"].decode().splitlines() == ["neg", "neu", "pos"]
    assert "labels.txt" not in packed_files((exported["embed"] / MEDIAPIPE_FILE).read_bytes())


@pytest.mark.slow  # three exports and MediaPipe in its own process: about 40 s
def test_text_classifier_answers_as_the_saved_model(exported):
    got = run_mediapipe("TextClassifier", exported["classify"] / MEDIAPIPE_FILE, TEXTS)
    want = saved_model_outputs(exported["classify"], TEXTS)
    labels = ["neg", "neu", "pos"]
    for row, probabilities, label in zip(got, want["probabilities"], want["label"]):
        by_index = sorted(row, key=lambda c: c["index"])
        assert [c["category_name"] for c in by_index] == labels
        np.testing.assert_allclose([c["score"] for c in by_index], probabilities, atol=1e-5)
        assert row[0]["category_name"] == label.decode()  # MediaPipe lists the best first
    # The rows differ from each other, so agreeing is not a constant.
    assert np.ptp(want["probabilities"][:, 0]) > 1e-2


@pytest.mark.slow
def test_mediapipe_keeps_accents_that_kbert_strips(exported):
    """MediaPipe's WordPiece tokenizer lower-cases ASCII only and keeps accents: it reads "cât" as a word
    out of the vocabulary ([UNK]), where kbert's uncased tokenizer reads "cat"."""
    (got,) = run_mediapipe("TextClassifier", exported["classify"] / MEDIAPIPE_FILE, ["the cât sat"])
    scores = [c["score"] for c in sorted(got, key=lambda c: c["index"])]
    kbert_reads, mediapipe_reads = saved_model_outputs(exported["classify"], ["the cât sat", "the zzz sat"])[
        "probabilities"]
    np.testing.assert_allclose(scores, mediapipe_reads, atol=1e-5)
    assert np.abs(np.asarray(scores) - kbert_reads).max() > 1e-4
    tokenizer = kbert.BertTokenizer(TINY_VOCAB)
    assert tokenizer(["the cât sat", "the zzz sat"]).to_list() == [[5, 6, 7], [5, 1, 7]]


@pytest.mark.slow
@pytest.mark.parametrize("task", ["embed", "encoder"])
def test_text_embedder_answers_as_the_saved_model(exported, task):
    got = np.asarray(run_mediapipe("TextEmbedder", exported[task] / MEDIAPIPE_FILE, TEXTS))
    want = saved_model_outputs(exported[task], TEXTS)["embedding"]
    np.testing.assert_allclose(got, want, atol=1e-5)
    assert np.abs(want[0] - want[1]).max() > 1e-3


@pytest.mark.parametrize("task, says", [
    ("tag", "no MediaPipe export of a tag model"),
    ("qa", "no MediaPipe export of a qa model"),
    ("regress", "no MediaPipe export of a regress model"),
])
def test_tasks_mediapipe_has_no_task_for_are_refused(task, says, tmp_path):
    source = sources()[task]
    assert says in refusal(source) and "TextClassifier" in refusal(source)
    with pytest.raises(ValueError, match=says):
        export(source, tmp_path / "out", mediapipe=True)
    assert not (tmp_path / "out").exists()


def test_pairs_cased_vocabularies_and_byte_level_bpe_are_refused(tmp_path, capsys):
    classify = sources()["classify"]
    pair = dataclasses.replace(classify, task=dataclasses.replace(classify.task, text_pair_column="text_pair"))
    assert "text pairs" in refusal(pair)
    cased = dataclasses.replace(classify, tokenizer=kbert.BertTokenizer(TINY_VOCAB, lowercase=False))
    assert "AsciiStrToLower" in refusal(cased)
    assert "byte-level BPE" in kbert.ByteLevelBpeTokenizer.mediapipe_unsupported
    # The CLI says it and writes nothing.
    model_dir = tmp_path / "cased"
    kbert.save_model(cased.model, model_dir, cased.tokenizer, cased.task, sequence_length=SEQ)
    assert main(["export", str(model_dir), "--out", str(tmp_path / "out"), "--mediapipe"]) == 1
    assert "cased vocabulary" in capsys.readouterr().err and not (tmp_path / "out").exists()
