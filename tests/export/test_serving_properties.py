"""Bad input never crashes the serving signature, and output shapes follow the batch (hypothesis)."""

from __future__ import annotations

import pathlib
import sys

import numpy as np
import pytest
import tensorflow as tf
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

sys.path.insert(0, str(pathlib.Path(__file__).parent))  # importlib mode: the helper beside us
import export_cases as cases  # noqa: E402

from kbert.export import export  # noqa: E402


@pytest.fixture(scope="module")
def signatures(tmp_path_factory):
    srcs = cases.sources()
    root = tmp_path_factory.mktemp("props")
    out = {}
    for task in ("classify", "tag"):
        out[task] = tf.saved_model.load(str(export(srcs[task], root / task / "1"))).signatures["serving_default"]
    return out


one_text = st.one_of(
    st.text(max_size=40).map(lambda s: s.encode("utf-8")),
    st.binary(max_size=40),  # mostly invalid UTF-8
    st.just(b""),
    st.sampled_from([b"\xff\xfe", b"\xc3", "caf\u00e9 \u4e2d\u6587 \U0001F600".encode(), b"\x00 the cat"]),
)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(texts=st.lists(one_text, min_size=0, max_size=64))
@example(texts=[])
@example(texts=[("the cat sat " * 90_000).encode()[:1_000_000], b"\xff" * 10])
def test_any_bytes_any_batch(signatures, texts):
    batch = len(texts)
    x = tf.constant(texts, dtype=tf.string, shape=[batch])
    out = signatures["classify"](text=x)
    assert out["probabilities"].shape == (batch, 3)
    assert out["label_id"].shape == (batch,) and out["label"].shape == (batch,)
    if batch:
        np.testing.assert_allclose(out["probabilities"].numpy().sum(-1), 1.0, atol=1e-5)
    tags = signatures["tag"](text=x)
    n = tags["num_words"].numpy()
    assert n.shape == (batch,)
    width = tags["word_label"].shape[1]
    assert width == (n.max() if batch else 0) or (batch == 0 and width in (0, None))
    for key in ("word_start", "word_end", "word_label_id", "word_text"):
        assert tags[key].shape == (batch, width)
    starts, ends = tags["word_start"].numpy(), tags["word_end"].numpy()
    for b in range(batch):
        assert (starts[b, :n[b]] >= 0).all() and (ends[b, :n[b]] > starts[b, :n[b]]).all()
        assert (starts[b, n[b]:] == -1).all()
