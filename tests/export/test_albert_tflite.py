"""`kbert export --tflite` for ALBERT with its SentencePiece tokenizer: LiteRT answers as the SavedModel does,
from raw strings; exports whose outputs need character offsets (tagging, QA) are refused before anything is
written."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest
import tensorflow as tf

import kbert
from kbert.cli.main import main
from kbert.export import ExportSource, export
from kbert.export.tflite import interpreter, run
from kbert.tasks import QuestionAnsweringTask, TaggingTask
from tests.export.test_family_tasks import finetune
from tests.family_checkpoints import albert_sentencepiece_dir
from tests.training.conftest import FILLER, keyword_rows

pytest.importorskip("ai_edge_litert")
ODD = ["A ``Quoted'' CAFÉ  naïve", "x''y``z", "Straße ﬁne ①", "\u3000lead\u00a0and trail  ", "", "\x01the", "Ｈｅｌｌｏ"]


@pytest.fixture(scope="module")
def albert_classifier(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("albert_tflite")
    rows = keyword_rows(64, 0)
    init = albert_sentencepiece_dir(tmp / "init", [text for text, _ in rows])
    return finetune(tmp, init, "classify", ["text", "label"], keyword_rows(32, 1))


@pytest.mark.slow  # fine-tuning, a SavedModel and its TFLite conversion: about 40 s
def test_albert_tflite_answers_as_the_saved_model(tmp_path, albert_classifier, capsys):
    rng = random.Random(0)
    words = FILLER + ["good", "bad", "Café", "ÉCOLE", "``", "''", "naïve"]
    texts = list(dict.fromkeys(ODD + [" ".join(rng.choices(words, k=rng.randint(1, 20))) for _ in range(1000)]))
    # The head scaled and its bias moved into the widest gap between neighbouring margins in the middle half, so
    # that the labels vary between texts and no text sits near the tie. Distinct strings are not enough: texts
    # that differ only in case or past the 32-token cut share their logits (the CI host twice drew such a group at
    # the plain median).
    model = kbert.load_model(albert_classifier, compile=False)
    head = model.get_layer("logits")
    head.kernel.assign(head.kernel * 200)
    logits = model(model.preprocessor(texts), training=False).numpy()
    margins = np.unique(logits[:, 1] - logits[:, 0])
    middle = margins[len(margins) // 4 : 3 * len(margins) // 4]
    widest = np.argmax(np.diff(middle))
    tie = (middle[widest] + middle[widest + 1]) / 2
    # Every text at least 2e-5 from the tie: several times the largest logit difference between LiteRT and the
    # SavedModel seen here (3e-6), so that the labels below must agree.
    assert middle[widest + 1] - middle[widest] > 4e-5
    head.bias.assign(head.bias + np.array([0.0, -tie], np.float32))
    scaled = tmp_path / "scaled"
    kbert.save_model(model, scaled, model.tokenizer, model.task, 32, model.preprocessor.truncate)
    out = tmp_path / "export" / "1"
    assert main(["export", str(scaled), "--out", str(out), "--tflite"]) == 0
    saved = tf.saved_model.load(str(out)).signatures["serving_default"](text=tf.constant(texts))
    lite = run(interpreter(out / "model.tflite"), {"text": texts})
    np.testing.assert_allclose(lite["probabilities"], saved["probabilities"].numpy(), atol=1e-5)
    np.testing.assert_array_equal(lite["label_id"], saved["label_id"].numpy())
    assert len(set(saved["label_id"].numpy().tolist())) > 1  # both labels occur: the check can fail
    capsys.readouterr()
    assert main(["predict", str(out / "model.tflite"), *ODD[:3]]) == 0
    printed = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith("{")]
    np.testing.assert_allclose([p["probabilities"] for p in printed], saved["probabilities"].numpy()[:3], atol=1e-5)


@pytest.mark.slow  # shares the fine-tuned model above
@pytest.mark.parametrize("task", [TaggingTask(labels=["O", "B-X"]), QuestionAnsweringTask()], ids=["tag", "qa"])
def test_offset_tasks_refuse_tflite_before_writing(tmp_path, albert_classifier, task):
    model = kbert.load_model(albert_classifier)
    source = ExportSource(model, model.tokenizer, task, 32)
    out = tmp_path / "refused"
    with pytest.raises(ValueError, match="offsets") as refusal:
        export(source, out, tflite=True)
    assert "SentencePieceTokenizer" in str(refusal.value) and task.name in str(refusal.value)
    assert not list(tmp_path.iterdir())
