"""`kbert export` / `kbert predict` end to end, the issue's contract, the encoder export and its size."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys

import keras
import numpy as np
import pytest

import kbert
from kbert.cli.main import main

sys.path.insert(0, str(pathlib.Path(__file__).parent))  # importlib mode: the helper beside us
import export_cases as cases  # noqa: E402


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    source = cases.sources()["classify"]
    directory = tmp_path_factory.mktemp("finetuned") / "sst2"
    kbert.save_model(source.model, directory, source.tokenizer, source.task, sequence_length=cases.SEQ)
    return directory


def test_cli_export_tflite_and_predict(model_dir, tmp_path, capsys):
    out = tmp_path / "models" / "sst2" / "1"
    assert main(["export", str(model_dir), "--out", str(out), "--tflite"]) == 0
    assert (out / "saved_model.pb").is_file() and (out / "model.tflite").is_file()
    assert main(["export", str(model_dir), "--out", str(out)]) == 1  # exists, no --force
    (out / "stale.txt").write_text("from the old version")
    assert main(["export", str(model_dir), "--out", str(out), "--tflite", "--force"]) == 0
    assert not (out / "stale.txt").exists()  # replaced as a whole
    capsys.readouterr()
    jsonl = tmp_path / "in.jsonl"
    jsonl.write_text(json.dumps({"text": "the cat sat"}) + "\n" + json.dumps({"text": "a bad dog"}) + "\n")
    results = {}
    for target in (out, out / "model.tflite"):
        assert main(["predict", str(target), "the good cat", "--input", str(jsonl)]) == 0
        lines = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
        assert len(lines) == 3
        assert all(r["label"] in ("neg", "neu", "pos") and abs(sum(r["probabilities"]) - 1) < 1e-5 for r in lines)
        results[target.suffix] = lines
    for a, b in zip(results[""], results[".tflite"]):
        np.testing.assert_allclose(a["probabilities"], b["probabilities"], atol=1e-4)
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"text": "ok"}\n{"txt": "no"}\n')
    assert main(["predict", str(out), "--input", str(bad)]) == 1
    assert f"{bad}:2" in capsys.readouterr().err


def test_contract_fresh_process(model_dir, tmp_path):
    out = tmp_path / "EXPORT"
    assert main(["export", str(model_dir), "--out", str(out), "--tflite"]) == 0
    code = ("import sys, tensorflow as tf, tensorflow_text\n"
            f"r = tf.saved_model.load({str(out)!r}).signatures['serving_default'](text=tf.constant(['the cat', 'a dog']))\n"
            "assert not [m for m in sys.modules if m.startswith('kbert')]\n"
            "print(r['probabilities'].shape)\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd="/",
                          env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"))
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip().splitlines()[-1] == "(2, 3)"


def test_encoder_checkpoint_export_and_size(tmp_path):
    """A bare kbert checkpoint exports as task "encoder"; the SavedModel is <= 1.1x weights + vocab."""
    import tensorflow as tf

    keras.utils.set_random_seed(0)
    from conftest import TINY_VOCAB

    # Big enough that the weights, not the graph, dominate (as in any real model): 2.4 MB of weights.
    enc = kbert.BertEncoder(vocab_size=len(TINY_VOCAB), hidden_size=128, num_hidden_layers=3,
                            num_attention_heads=2, intermediate_size=512, max_position_embeddings=64)
    ckpt = tmp_path / "ckpt"
    kbert.save_pretrained(enc, ckpt, vocabulary=list(TINY_VOCAB))
    out = tmp_path / "enc"
    assert main(["export", str(ckpt), "--out", str(out), "--sequence-length", "32"]) == 0
    weights = sum(int(np.prod(w.shape)) * 4 for w in enc.weights)
    vocab_bytes = (ckpt / "vocab.txt").stat().st_size
    size = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
    graph = (out / "saved_model.pb").stat().st_size
    # Each weight is stored once (ExportArchive stores two copies: 2x). The graph is a fixed ~1 MB (the
    # tokenizer's tables and five signatures), 1% of MiniLM; the benchmark reports the whole-export ratio.
    assert size - graph <= 1.1 * (weights + vocab_bytes), (size, graph, weights)
    assert graph < 1.5e6
    sig = tf.saved_model.load(str(out)).signatures["serving_default"]
    got = sig(text=tf.constant(["the cat sat", "dog"]))
    pre = kbert.BertPreprocessor(kbert.BertTokenizer(list(TINY_VOCAB)), sequence_length=32)
    x = {k: tf.cast(v, tf.int32) for k, v in pre(["the cat sat", "dog"]).items()}
    np.testing.assert_allclose(got["pooled_output"].numpy(), enc(x)["pooled_output"].numpy(), atol=1e-5)


def test_cli_bfloat16_export_and_predict_say_their_precision(model_dir, tmp_path, capsys, monkeypatch):
    from kbert import precision

    out = tmp_path / "bf16"
    assert main(["export", str(model_dir), "--out", str(out), "--precision", "bfloat16"]) == 0
    assert "SavedModel (bfloat16)" in capsys.readouterr().out
    assert json.loads((out / "assets" / "kbert_export.json").read_text())["precision"] == "bfloat16"
    # A CPU without native bfloat16: predict still answers, and says how slow it is.
    monkeypatch.setattr(precision, "cpu_flags", lambda: frozenset({"avx2"}))
    assert main(["predict", str(out), "the good cat", "a bad dog"]) == 0
    captured = capsys.readouterr()
    lines = [json.loads(x) for x in captured.out.splitlines()]
    assert len(lines) == 2 and all(abs(sum(r["probabilities"]) - 1) < 1e-5 for r in lines)
    assert "precision: bfloat16" in captured.err and "no native bfloat16" in captured.err
    assert "slower than float32" in captured.err
    with pytest.warns(precision.PrecisionWarning, match="no native bfloat16"):
        assert main(["export", str(model_dir), "--out", str(tmp_path / "again"), "--precision", "bfloat16"]) == 0
    with pytest.raises(SystemExit):  # argparse names the choices
        main(["export", str(model_dir), "--out", str(tmp_path / "x"), "--precision", "float16"])
    assert "choose from 'float32', 'bfloat16'" in capsys.readouterr().err


def test_cli_export_precision_auto_follows_this_cpu(model_dir, tmp_path, capsys):
    from kbert.precision import has_native_bf16

    out = tmp_path / "auto" / "1"
    assert main(["export", str(model_dir), "--out", str(out), "--precision", "auto"]) == 0
    expected = "bfloat16" if has_native_bf16() else "float32"
    printed = capsys.readouterr().out
    assert f"SavedModel ({expected}; auto: this CPU" in printed
    assert json.loads((out / "assets" / "kbert_export.json").read_text())["precision"] == expected


def test_cli_predict_sorts_batches_by_length_and_answers_in_input_order(model_dir, tmp_path, capsys):
    import tensorflow as tf

    out = tmp_path / "sorted" / "1"
    assert main(["export", str(model_dir), "--out", str(out)]) == 0
    texts = ["a", "the cat sat on the mat the dog ran", "dog", "the good cat sat", "", "the mat"]
    capsys.readouterr()
    assert main(["predict", str(out), *texts, "--batch-size", "2", "--workers", "1"]) == 0
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    serve = tf.saved_model.load(str(out)).signatures["serving_default"]
    alone = [serve(text=tf.constant([text]))["probabilities"].numpy()[0] for text in texts]
    assert len(lines) == len(texts)
    for line, expected in zip(lines, alone):
        np.testing.assert_allclose(line["probabilities"], expected, atol=1e-5)
