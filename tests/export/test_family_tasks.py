"""`kbert finetune TASK --init DIR`, `kbert export` and `kbert predict` for the ALBERT and RoBERTa families:
a tiny random HF checkpoint with its own tokenizer files (RoBERTa: byte-level BPE learned by HF `tokenizers`),
fine-tuned end to end; the SavedModel answers as the Keras model does and packs as HF's tokenizer does."""

from __future__ import annotations

import json

import numpy as np
import pytest
import tensorflow as tf

import kbert
from kbert.cli.main import main
from tests.family_checkpoints import roberta_dir
from tests.training.conftest import keyword_rows, write_tsv

transformers = pytest.importorskip("transformers")
TEXTS = ["the good cat sat", "a bad dog ran on the mat .", "good", "dog , cat"]


@pytest.fixture(scope="module")
def roberta_init(tmp_path_factory):
    rows = keyword_rows(64, 0)
    return roberta_dir(tmp_path_factory.mktemp("roberta") / "init", [text for text, _ in rows])


def finetune(tmp_path, init, command: str, header: list[str], rows, *flags: str):
    train = write_tsv(tmp_path / f"{command}.tsv", header, rows)
    out = tmp_path / f"{command}-model"
    assert main(["finetune", command, "--init", str(init), "--train", str(train), "--validation", str(train),
                 "--sequence-length", "32", "--epochs", "1", "--batch-size", "16", "--out", str(out),
                 "--verbose", "0", *flags]) == 0
    return out


@pytest.mark.slow  # fine-tuning, a SavedModel and a reload: about 30 s
def test_roberta_classify_finetune_export_predict(tmp_path, roberta_init, capsys):
    out = finetune(tmp_path, roberta_init, "classify", ["text", "label"], keyword_rows(32, 1))
    model = kbert.load_model(out)
    assert isinstance(model.tokenizer, kbert.ByteLevelBpeTokenizer)
    export = tmp_path / "export" / "1"
    assert main(["export", str(out), "--out", str(export)]) == 0
    # The export carries the tokenizer's own files: they reload as the same tokenizer.
    assert kbert.load_tokenizer(export / "assets").get_vocabulary() == model.tokenizer.get_vocabulary()
    config = json.loads((export / "assets" / "kbert_export.json").read_text())
    assert config["tokenizer"]["tokenizer_class"] == "RobertaTokenizer"
    loaded = tf.saved_model.load(str(export))
    # Packing as HF's RoBERTa tokenizer does, one text and a pair (<s> a </s></s> b </s>, segment ids 0).
    hf = transformers.RobertaTokenizerFast.from_pretrained(str(roberta_init))
    packed = loaded.signatures["preprocess_pair"](text=tf.constant(TEXTS), text_pair=tf.constant(TEXTS[::-1]))
    reference = hf(TEXTS, TEXTS[::-1], padding=True)
    np.testing.assert_array_equal(packed["token_ids"].numpy(), reference["input_ids"])
    np.testing.assert_array_equal(packed["padding_mask"].numpy(), reference["attention_mask"])
    assert not packed["segment_ids"].numpy().any()
    # The SavedModel answers as the Keras model on the same texts, and `kbert predict` prints it.
    got = loaded.signatures["serving_default"](text=tf.constant(TEXTS))["probabilities"].numpy()
    want = tf.nn.softmax(model(model.preprocessor(TEXTS), training=False)).numpy()
    np.testing.assert_allclose(got, want, atol=1e-5)
    capsys.readouterr()
    assert main(["predict", str(export), *TEXTS]) == 0
    printed = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith("{")]
    np.testing.assert_allclose([p["probabilities"] for p in printed], want, atol=1e-5)
