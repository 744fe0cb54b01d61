"""One loaded SavedModel answering 16 threads at once gives each caller the answer it gets alone."""

from __future__ import annotations

import numpy as np
import pytest

import kbert
from tests.export.load_harness import answer_alone, differences, hammer, make_requests
from tests.export.serving_runtimes import SavedModelRuntime, export_model, tiny_encoder
from conftest import TINY_VOCAB

SEQ = 16


@pytest.fixture(scope="module")
def serve(tmp_path_factory):
    tokenizer = kbert.BertTokenizer(TINY_VOCAB)
    model = kbert.BertClassifier(tiny_encoder(tokenizer), 3, dropout=0.0)
    runtime = SavedModelRuntime(export_model(model, tokenizer, tmp_path_factory.mktemp("load"), SEQ,
                                             tflite=False))
    return lambda texts: runtime("serving_default", text=texts)


def test_sixteen_threads_answer_as_alone(serve):
    base = [t for t in TINY_VOCAB if t.isalpha()] + ["caf\u00e9", "\u4e2d\u6587", "!"]
    words = [str(w) for w in np.random.default_rng(0).choice(base, 500)]
    requests = make_requests(words, count=24, seed=3, max_texts=64, max_words=2 * SEQ)
    reference, alone = answer_alone(serve, requests)
    # The requests differ from each other, so answering one caller with another's answer is caught.
    firsts = {tuple(np.round(r["probabilities"][0], 6)) for r in reference}
    assert len(firsts) > len(requests) // 2
    assert alone.requests == 24 and alone.texts == sum(len(r) for r in requests)
    result = hammer(serve, requests, reference, threads=16, per_thread=4)
    assert result.errors == []
    assert result.requests == 64 and len(result.latencies) == 64
    assert result.differing == 0 and result.max_abs_difference == 0.0
    figures = result.figures()
    assert figures["requests_per_s"] > 0 and figures["p50_ms"] <= figures["p99_ms"]


def test_differences_catches_one_ulp_and_a_swapped_label():
    want = {"probabilities": np.array([[0.25, 0.75]], np.float32), "label": np.array([b"pos"], object)}
    assert differences(want, {k: v.copy() for k, v in want.items()}) == (True, 0.0)
    nudged = dict(want, probabilities=np.nextafter(want["probabilities"], 1.0).astype(np.float32))
    same, largest = differences(nudged, want)
    assert not same and 0 < largest < 1e-7
    assert differences(dict(want, label=np.array([b"neg"], object)), want) == (False, 0.0)
    assert differences({"probabilities": want["probabilities"]}, want)[0] is False


def test_hammer_reports_errors_and_wrong_answers():
    requests = [np.array([b"a"], object), np.array([b"b", b"c"], object)]
    reference = [{"n": np.array([1])}, {"n": np.array([2])}]

    def flaky(texts: np.ndarray) -> dict[str, np.ndarray]:
        if len(texts) == 2:
            raise RuntimeError("boom")
        return {"n": np.array([7])}  # wrong answer for request 0

    result = hammer(flaky, requests, reference, threads=4, per_thread=10, seed=1)
    assert len(result.errors) + result.requests == 40
    assert result.errors and all("boom" in e for e in result.errors)
    assert result.differing == result.requests > 0
    with pytest.raises(ValueError):
        hammer(flaky, requests, reference, threads=2)
