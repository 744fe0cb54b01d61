"""Bad input never crashes either runtime, outputs are finite and follow the batch, TFLite = SavedModel.

The exports are built as a user builds them (`kbert.save_model`, then `kbert export --tflite`), over
all-MiniLM-L6-v2's vocabulary so CJK, accented and full-width text meets real tokens. The everyday tier
tries a few hundred inputs; the slow tier runs the 10,000 of `python -m tests.export.fuzz_harness`.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import kbert
from tests.export import fuzz_harness as fuzz_export
from tests.export.serving_runtimes import SavedModelRuntime, TfliteRuntime, as_batch, export_model, tiny_encoder

TAG_LABELS = ["O", "B-ANI", "I-ANI", "B-OBJ", "I-OBJ"]


@pytest.fixture(scope="module")
def exports(minilm, tmp_path_factory):
    """The one-text and pair classifier exports (with TFLite) and a tagger export (SavedModel)."""
    root = tmp_path_factory.mktemp("props")
    out = fuzz_export.build_exports(root)
    tokenizer = kbert.load_tokenizer(minilm)
    tagger = kbert.BertTokenClassifier(tiny_encoder(tokenizer), len(TAG_LABELS), dropout=0.0)
    out["tag"] = export_model(tagger, tokenizer, root / "tag", fuzz_export.SEQUENCE_LENGTH,
                              kbert.TaggingTask(labels=TAG_LABELS), tflite=False)
    return out


@pytest.fixture(scope="module")
def runtimes(exports):
    return {"classify": SavedModelRuntime(exports["single"]), "classify_tflite": TfliteRuntime(exports["single"]),
            "tag": SavedModelRuntime(exports["tag"])}


one_text = st.one_of(
    st.text(max_size=40).map(lambda s: s.encode("utf-8")),
    st.binary(max_size=40),  # mostly invalid UTF-8
    st.just(b""),
    st.sampled_from([b"\xff\xfe", b"\xc3", "caf\u00e9 \u4e2d\u6587 \U0001F600".encode(), b"\x00 the cat",
                     b"[SEP] [CLS]", "\u3000\t\n".encode()]),
)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(texts=st.lists(one_text, min_size=0, max_size=64))
@example(texts=[])
@example(texts=[("the cat sat " * 90_000).encode()[:1_000_000], b"\xff" * 10])
def test_any_bytes_any_batch(runtimes, texts):
    batch = len(texts)
    x = as_batch(texts)
    for name in ("classify", "classify_tflite"):
        assert fuzz_export.check_classify(runtimes[name]("serving_default", text=x), batch,
                                          fuzz_export.LABELS) == [], name
    tags = runtimes["tag"]("serving_default", text=x)
    n = tags["num_words"]
    assert n.shape == (batch,)
    width = tags["word_label"].shape[1]
    assert width == (n.max() if batch else 0) or (batch == 0 and width in (0, None))
    for key in ("word_start", "word_end", "word_label_id", "word_text"):
        assert tags[key].shape == (batch, width)
    starts, ends = tags["word_start"], tags["word_end"]
    for b in range(batch):
        assert (starts[b, :n[b]] >= 0).all() and (ends[b, :n[b]] > starts[b, :n[b]]).all()
        assert (starts[b, n[b]:] == -1).all()


def test_check_classify_rejects_malformed_answers():
    good = {"probabilities": np.array([[0.2, 0.3, 0.5]], np.float32), "label_id": np.array([2], np.int32),
            "label": np.array([b"pos"], object)}
    assert fuzz_export.check_classify(good, 1, fuzz_export.LABELS) == []
    bad = [dict(good, probabilities=np.array([[np.nan, 0.5, 0.5]], np.float32)),
           dict(good, probabilities=np.array([[0.2, 0.3, 0.6]], np.float32)),
           dict(good, label_id=np.array([1], np.int32)),
           dict(good, label=np.array([b"neg"], object)),
           dict(good, probabilities=good["probabilities"][:, :2])]
    for answer in bad:
        assert fuzz_export.check_classify(answer, 1, fuzz_export.LABELS), answer


def run_fuzz(exports: dict, examples: int) -> fuzz_export.FuzzReport:
    classifiers = {k: v for k, v in exports.items() if k in ("single", "pair")}
    report = fuzz_export.fuzz(classifiers, examples, seed=0)
    assert report.inputs == {"savedmodel": examples, "tflite": examples}
    assert report.crashes == [] and report.malformed == []
    return report


def test_tflite_agrees_with_savedmodel(exports):
    """A few hundred generated inputs: same label and probabilities within 1e-4 on every row."""
    report = run_fuzz(exports, 300)
    disagreeing = report.mismatched_rows
    assert disagreeing == 0, fuzz_export.markdown(report, 0.0)


@pytest.mark.slow
def test_tflite_agrees_with_savedmodel_at_volume(exports):
    """10,000 generated inputs per runtime, as `python -m tests.export.fuzz_harness` runs them."""
    report = run_fuzz(exports, 10_000)
    disagreeing = report.mismatched_rows
    assert disagreeing == 0, fuzz_export.markdown(report, 0.0)
