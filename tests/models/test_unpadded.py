"""The encoder on real tokens only (inference) computes what the padded encoder computes, for every family and head.

Rows of different lengths, one of the full length and an all-padding tail: real positions agree to 1e-5 in
float32, and every decision the tasks take (labels, tags, spans) is identical.
"""

from __future__ import annotations

import keras
import numpy as np
import pytest
import tensorflow as tf

import kbert
from kbert.layers import token_packing
from kbert.tasks.span_decoding import best_spans

SIZES = dict(vocab_size=60, hidden_size=32, num_hidden_layers=3, num_attention_heads=4, intermediate_size=64,
             max_position_embeddings=40, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
LENGTHS = [13, 4, 16, 1, 9, 0, 0]  # the full length (16), short rows, and two rows of padding only at the tail
SEQ = 16


def make_encoder(family: str) -> kbert.BertEncoder:
    keras.utils.set_random_seed(3)
    if family == "albert":
        return kbert.AlbertEncoder(**SIZES, embedding_size=16, num_hidden_groups=2, inner_group_num=2)
    if family == "roberta":
        return kbert.RobertaEncoder(**{**SIZES, "max_position_embeddings": SEQ + 2}, type_vocab_size=1)
    return kbert.BertEncoder(**SIZES)


def make_model(family: str, head: str) -> keras.Model:
    encoder = make_encoder(family)
    models = {
        "encoder": lambda: encoder,
        "classify": lambda: kbert.BertClassifier(encoder, 3, dropout=0.0),
        "regress": lambda: kbert.BertClassifier(encoder, 1, dropout=0.0),
        "tag": lambda: kbert.BertTokenClassifier(encoder, 5, dropout=0.0),
        "qa": lambda: kbert.BertQuestionAnswerer(encoder, dropout=0.0),
        "embed_mean": lambda: kbert.BertSentenceEmbedder(encoder, pooling="mean"),
        "embed_max": lambda: kbert.BertSentenceEmbedder(encoder, pooling="max"),
        "embed_cls": lambda: kbert.BertSentenceEmbedder(encoder, pooling="cls"),
    }
    model = models[head]()
    for layer in model.layers:  # larger head weights, so that the decisions differ from row to row
        if layer.name in ("logits", "span_logits"):
            layer.kernel.assign(layer.kernel * 50)
    return model


def batch(family: str) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(7)
    mask = np.array([[1] * n + [0] * (SEQ - n) for n in LENGTHS], "int32")
    pad = 1 if family == "roberta" else 0
    ids = np.where(mask == 1, rng.integers(4, SIZES["vocab_size"], mask.shape), pad).astype("int32")
    segments = np.zeros_like(ids) if family == "roberta" else (np.arange(SEQ)[None, :] >= 6) * mask
    return {"token_ids": ids, "segment_ids": segments.astype("int32"), "padding_mask": mask}


def as_dict(outputs) -> dict[str, np.ndarray]:
    if isinstance(outputs, dict):
        return {name: np.asarray(value) for name, value in outputs.items()}
    return {"logits": np.asarray(outputs)}


def decisions(head: str, outputs: dict[str, np.ndarray], mask: np.ndarray) -> list:
    """What the task answers: a label per row, a tag per real token, the best span per row."""
    if head == "classify":
        return outputs["logits"].argmax(-1).tolist()
    if head == "tag":
        return [row[m.astype(bool)].tolist() for row, m in zip(outputs["logits"].argmax(-1), mask)]
    if head == "qa":
        spans = best_spans(tf.constant(outputs["start_logits"]), tf.constant(outputs["end_logits"]),
                           tf.constant(mask.astype(bool)), max_answer_tokens=5)
        return [spans["start_token"].numpy().tolist(), spans["end_token"].numpy().tolist()]
    return []


HEADS = ["encoder", "classify", "regress", "tag", "qa", "embed_mean", "embed_max", "embed_cls"]


@pytest.mark.parametrize("family", ["bert", "albert", "roberta"])
@pytest.mark.parametrize("head", HEADS)
def test_unpadded_equals_padded(family, head):
    model = make_model(family, head)
    x = batch(family)
    mask = x["padding_mask"]
    real_rows = mask.any(1)
    with token_packing.padded():
        padded = as_dict(model(x, training=False))
    unpadded = as_dict(model(x, training=False))
    assert padded.keys() == unpadded.keys()
    for name, expected in padded.items():
        got = unpadded[name]
        # The all-padding rows too (max pooling over no token is -inf, normalised to NaN, in both paths).
        np.testing.assert_array_equal(np.isfinite(got), np.isfinite(expected), err_msg=name)
        if got.ndim >= 2 and got.shape[1] == SEQ:  # per position: the real ones
            expected, got = expected[mask == 1], got[mask == 1]
        else:  # per row: the rows with a real token
            expected, got = expected[real_rows], got[real_rows]
        np.testing.assert_allclose(got, expected, atol=1e-5, rtol=0, err_msg=name)
    real = mask[real_rows]
    picked = {name: value[real_rows] for name, value in padded.items()}
    assert decisions(head, {n: v[real_rows] for n, v in unpadded.items()}, real) == decisions(head, picked, real)


def test_the_paths_differ_where_they_should():
    """The comparison above can fail: padding positions are computed in the padded path only (zeros unpadded),
    and a wrong packing (rows shifted by one token) moves real positions by far more than 1e-5."""
    encoder = make_encoder("bert")
    x = batch("bert")
    with token_packing.padded():
        padded = encoder(x, training=False)["sequence_output"].numpy()
    unpadded = encoder(x, training=False)["sequence_output"].numpy()
    assert np.abs(padded[x["padding_mask"] == 0]).min() > 0 and not unpadded[x["padding_mask"] == 0].any()
    shifted = np.roll(unpadded[x["padding_mask"] == 1], 1, axis=0)
    assert np.abs(shifted - padded[x["padding_mask"] == 1]).max() > 1e-2


def test_training_and_xla_run_padded():
    """Training keeps the padded step (its compiled pieces are per shape), and so does any XLA program (a
    `jit_compile` step, a TPU), whose shapes must be fixed: only inference outside XLA packs tokens."""
    encoder = make_encoder("bert")
    x = {name: tf.constant(value) for name, value in batch("bert").items()}

    def ops_of(function, **kwargs) -> set[str]:
        graph = tf.function(function, **kwargs).get_concrete_function().graph
        return {op.type for op in graph.get_operations()}

    assert "ScatterNd" in ops_of(lambda: encoder(x, training=False))
    assert "ScatterNd" not in ops_of(lambda: encoder(x, training=True))
    assert "ScatterNd" not in ops_of(lambda: encoder(x, training=False), jit_compile=True)
    with token_packing.padded():
        assert "ScatterNd" not in ops_of(lambda: encoder(x, training=False))
    compiled = tf.function(lambda: encoder(x, training=False)["sequence_output"], jit_compile=True)()
    with token_packing.padded():
        np.testing.assert_allclose(compiled, encoder(x, training=False)["sequence_output"], atol=1e-5)


def test_a_batch_of_padding_only_and_an_empty_batch():
    encoder = make_encoder("bert")
    for rows in (2, 0):
        x = {name: np.zeros((rows, SEQ), "int32") for name in ("token_ids", "segment_ids", "padding_mask")}
        out = encoder(x, training=False)
        assert out["sequence_output"].shape == (rows, SEQ, SIZES["hidden_size"])
        assert out["pooled_output"].shape == (rows, SIZES["hidden_size"])
        assert not out["sequence_output"].numpy().any()
