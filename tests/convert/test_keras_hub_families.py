"""keras-hub's AlbertBackbone and RobertaBackbone <-> kbert's AlbertEncoder and RobertaEncoder.

Random models, every weight perturbed (LayerNorms start at 1 and 0, biases at 0: a copy that swapped or dropped
one would still pass on fresh weights), compared in float32 on batches with padding.
"""

import warnings

import keras_hub
import numpy as np
import pytest

import kbert

ALBERT = dict(vocabulary_size=50, num_layers=4, num_heads=2, embedding_dim=8, hidden_dim=16, intermediate_dim=32,
              num_groups=2, num_inner_repetitions=2, max_sequence_length=16)
ROBERTA = dict(vocabulary_size=50, num_layers=2, num_heads=2, hidden_dim=16, intermediate_dim=32,
               max_sequence_length=16)
ATOL = 1e-5


def perturbed(model, seed=0):
    rng = np.random.default_rng(seed)
    for weight in model.trainable_weights:
        weight.assign(weight.numpy() + 0.2 * rng.standard_normal(weight.shape).astype("float32"))
    return model


def batch(padding="right", segments=True):
    """Two rows of 10 ids; the second with 3 padding tokens (RoBERTa's id 1) on the `padding` side, or none."""
    rng = np.random.default_rng(1)
    ids = rng.integers(5, 50, (2, 10)).astype("int32")
    if padding == "right":
        ids[1, 7:] = 1
    elif padding == "left":
        ids[1, :3] = 1
    segment_ids = np.zeros_like(ids)
    if segments:
        segment_ids[:, 5:] = 1
    padding_mask = (ids != 1).astype("int32")
    return {"token_ids": ids, "segment_ids": segment_ids * padding_mask, "padding_mask": padding_mask}


def largest_difference(a, b, rows=None):
    a, b = np.asarray(a), np.asarray(b)
    return np.abs(a[rows] - b[rows]).max() if rows is not None else np.abs(a - b).max()


def test_albert_backbone_to_kbert_and_back():
    backbone = perturbed(keras_hub.models.AlbertBackbone(**ALBERT))
    encoder = kbert.from_keras_hub(backbone)
    assert type(encoder) is kbert.AlbertEncoder
    config = encoder.bert_config
    assert (config.embedding_size, config.num_hidden_groups, config.inner_group_num, config.hidden_act) == \
        (8, 2, 2, "gelu_new")
    # Four layers in two groups of two blocks: both hold four blocks' weights, not eight.
    assert encoder.count_params() == backbone.count_params()
    inputs = batch()
    assert inputs["padding_mask"].min() == 0
    expected, got = backbone(inputs), encoder(inputs)
    real = {"sequence_output": inputs["padding_mask"].astype(bool), "pooled_output": None}  # kbert: zeros at padding
    for name in ("sequence_output", "pooled_output"):
        assert largest_difference(got[name], expected[name], real[name]) <= ATOL, name
    again = kbert.to_keras_hub(encoder)(inputs)
    for name in ("sequence_output", "pooled_output"):
        assert largest_difference(again[name], expected[name]) <= ATOL, name


def test_albert_encoder_to_keras_hub():
    encoder = perturbed(kbert.AlbertEncoder(vocab_size=50, embedding_size=8, hidden_size=16, num_hidden_layers=4,
                                            num_hidden_groups=2, inner_group_num=2, num_attention_heads=2,
                                            intermediate_size=32, max_position_embeddings=16), seed=3)
    backbone = kbert.to_keras_hub(encoder)
    assert type(backbone) is keras_hub.models.AlbertBackbone
    assert (backbone.num_groups, backbone.num_inner_repetitions, backbone.embedding_dim) == (2, 2, 8)
    inputs = batch()
    expected, got = encoder(inputs), backbone(inputs)
    real = {"sequence_output": inputs["padding_mask"].astype(bool), "pooled_output": None}  # kbert: zeros at padding
    for name in ("sequence_output", "pooled_output"):
        assert largest_difference(got[name], expected[name], real[name]) <= ATOL, name


def test_roberta_backbone_to_kbert_matches_on_real_tokens():
    backbone = perturbed(keras_hub.models.RobertaBackbone(**ROBERTA))
    with pytest.warns(UserWarning, match="RobertaBackbone has no pooler"):
        encoder = kbert.from_keras_hub(backbone)
    assert type(encoder) is kbert.RobertaEncoder
    # keras-hub's 16 positions are kbert's rows 2..17, after the padding id's row.
    assert (encoder.bert_config.max_position_embeddings, encoder.bert_config.max_sequence_length) == (18, 16)
    for padding in ("none", "right"):
        inputs = batch(padding, segments=False)
        expected = backbone({"token_ids": inputs["token_ids"], "padding_mask": inputs["padding_mask"]})
        got = encoder(inputs)["sequence_output"]
        assert largest_difference(got, expected, inputs["padding_mask"].astype(bool)) <= ATOL, padding


def test_roberta_encoder_to_keras_hub_matches_on_real_tokens():
    encoder = perturbed(kbert.RobertaEncoder(vocab_size=50, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                                             intermediate_size=32, max_position_embeddings=18), seed=5)
    # The one segment row is added to every token: keras-hub, which has no segment table, gets it in its positions.
    assert np.abs(encoder.embeddings.segment_embedding.embeddings.numpy()).min() > 0
    backbone = kbert.to_keras_hub(encoder)
    assert type(backbone) is keras_hub.models.RobertaBackbone and backbone.max_sequence_length == 16
    for padding in ("none", "right", "left"):
        inputs = batch(padding, segments=False)
        real = inputs["padding_mask"].astype(bool)
        expected = encoder(inputs)["sequence_output"]
        got = backbone({"token_ids": inputs["token_ids"], "padding_mask": inputs["padding_mask"]})
        if padding == "left":
            # kbert (as Hugging Face) counts a row's positions from its first real token, keras-hub from the row's
            # start: the documented difference.
            assert largest_difference(got, expected, real) > 1e-2
            assert largest_difference(got[0], expected[0]) <= ATOL  # the unpadded row still agrees
        else:
            assert largest_difference(got, expected, real) <= ATOL, padding


def test_what_a_keras_hub_backbone_cannot_hold_is_refused():
    albert = dict(vocab_size=50, embedding_size=8, hidden_size=16, num_attention_heads=2, intermediate_size=32,
                  max_position_embeddings=16)
    with pytest.raises(ValueError, match=r"needs num_hidden_layers \(3\) divisible by num_hidden_groups \(2\)"):
        kbert.to_keras_hub(kbert.AlbertEncoder(**albert, num_hidden_layers=3, num_hidden_groups=2))
    roberta = dict(vocab_size=50, hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=32)
    with pytest.raises(ValueError, match="RobertaBackbone has no segments; this encoder has type_vocab_size 2"):
        kbert.to_keras_hub(kbert.RobertaEncoder(**roberta, type_vocab_size=2))
    with pytest.raises(ValueError, match="RobertaBackbone fixes LayerNorm epsilon 1e-05; this encoder's is 1e-12"):
        kbert.to_keras_hub(kbert.RobertaEncoder(**roberta, layer_norm_eps=1e-12))
    other = keras_hub.models.DistilBertBackbone(vocabulary_size=50, num_layers=1, num_heads=2, hidden_dim=16,
                                                intermediate_dim=32, max_sequence_length=16)
    with pytest.raises(TypeError, match="BertBackbone, AlbertBackbone or RobertaBackbone, got DistilBertBackbone"):
        kbert.from_keras_hub(other)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # an ALBERT backbone has its pooler: no warning
        kbert.from_keras_hub(keras_hub.models.AlbertBackbone(**ALBERT))
