import math

import numpy as np
import pytest

import kbert


def tiny_encoder(**overrides):
    fields = dict(vocab_size=24, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                  intermediate_size=32, max_position_embeddings=16)
    fields.update(overrides)
    return kbert.BertEncoder(**fields)


def tiny_inputs(batch=2, seq=8, seed=0):
    rng = np.random.default_rng(seed)
    token_ids = rng.integers(5, 24, size=(batch, seq)).astype("int32")
    padding_mask = np.ones((batch, seq), "int32")
    padding_mask[-1, seq // 2:] = 0 if batch > 1 else 1
    segment_ids = np.zeros((batch, seq), "int32")
    segment_ids[:, seq // 2:] = 1
    return {"token_ids": token_ids, "segment_ids": segment_ids, "padding_mask": padding_mask}


@pytest.mark.parametrize(
    "preset, expected",
    # BertModel with pooler, vocab 30522 (HF transformers' parameter count for bert-base/large-uncased).
    [("base", 109_482_240), ("large", 335_141_888)],
)
def test_preset_parameter_counts(preset, expected):
    assert kbert.BertEncoder.from_preset(preset).count_params() == expected


@pytest.mark.parametrize("preset, layers, hidden", [
    ("tiny", 2, 128), ("mini", 4, 256), ("small", 4, 512), ("medium", 8, 512)])
def test_small_presets_shapes(preset, layers, hidden):
    config = kbert.BertConfig.from_preset(preset)
    assert (config.num_hidden_layers, config.hidden_size) == (layers, hidden)
    assert config.num_attention_heads == hidden // 64 and config.intermediate_size == 4 * hidden
    assert config.hidden_act == "gelu" and config.layer_norm_eps == 1e-12
    assert config.vocab_size == 30522 and config.max_position_embeddings == 512


def test_parameter_count_formula():
    # Embeddings V*H + P*H + S*H + 2H; per block 4(H^2+H) + 2H + 2*H*I + I + H + 2H; pooler H^2 + H.
    encoder = tiny_encoder()
    V, H, P, S, I, L = 24, 16, 16, 2, 32, 2
    per_block = 4 * (H * H + H) + 2 * H + (H * I + I) + (I * H + H) + 2 * H
    assert encoder.count_params() == (V + P + S) * H + 2 * H + L * per_block + H * H + H


def test_outputs_and_any_sequence_length():
    encoder = tiny_encoder()
    for seq in (1, 5, 16):
        out = encoder(tiny_inputs(seq=seq))
        assert out["sequence_output"].shape == (2, seq, 16)
        assert out["pooled_output"].shape == (2, 16)


def test_padding_does_not_change_real_tokens():
    encoder = tiny_encoder()
    inputs = tiny_inputs(batch=1, seq=6)  # one sequence, no padding
    padded = {k: np.concatenate([v, np.zeros((1, 3), v.dtype)], axis=1) for k, v in inputs.items()}
    a = encoder(inputs)["sequence_output"].numpy()
    b = encoder(padded)["sequence_output"].numpy()[:, :6]
    np.testing.assert_allclose(a, b, atol=1e-5)


def test_dropout_only_in_training():
    encoder = tiny_encoder(hidden_dropout_prob=0.5, attention_probs_dropout_prob=0.5)
    inputs = tiny_inputs()
    a = encoder(inputs, training=False)["sequence_output"].numpy()
    b = encoder(inputs, training=False)["sequence_output"].numpy()
    c = encoder(inputs, training=True)["sequence_output"].numpy()
    np.testing.assert_array_equal(a, b)
    assert np.abs(a - c).max() > 1e-3


def test_probe_returns_hidden_states_and_attention():
    encoder = tiny_encoder()
    inputs = tiny_inputs()
    probe = encoder.probe(inputs)
    assert len(probe["hidden_states"]) == 3 and len(probe["attention_probs"]) == 2
    real = inputs["padding_mask"].astype(bool)  # the encoder's inference runs real tokens only: zeros at padding
    np.testing.assert_allclose(probe["sequence_output"][real], encoder(inputs)["sequence_output"].numpy()[real],
                               atol=1e-6)
    probs = probe["attention_probs"][0].numpy()  # (batch, heads, query, key)
    assert probs.shape == (2, 2, 8, 8)
    np.testing.assert_allclose(probs.sum(-1), 1.0, atol=1e-5)
    assert probs[1, :, :, 4:].max() < 1e-6  # no attention to padding


def test_mixed_precision_policy():
    encoder = tiny_encoder(dtype="mixed_bfloat16")
    out = encoder(tiny_inputs())
    assert out["sequence_output"].dtype == "bfloat16"
    assert encoder.weights[0].dtype == "float32"
    rebuilt = kbert.BertEncoder.from_config(encoder.get_config())  # the policy survives a save
    assert rebuilt(tiny_inputs())["sequence_output"].dtype == "bfloat16"


def test_rejects_bad_config():
    with pytest.raises(ValueError, match="divisible"):
        tiny_encoder(num_attention_heads=3)
    with pytest.raises(ValueError, match="preset"):
        kbert.BertEncoder.from_preset("huge")


def test_config_json_round_trip(tmp_path):
    config = kbert.BertConfig.from_preset("mini", vocab_size=1000)
    config.to_json_file(tmp_path / "c.json")
    assert kbert.BertConfig.from_json_file(tmp_path / "c.json") == config
    # Google's bert_config.json has no layer_norm_eps; HF's tanh GELU name is kept as written.
    google = {"vocab_size": 10, "hidden_size": 8, "num_hidden_layers": 1, "num_attention_heads": 2,
              "intermediate_size": 32, "hidden_act": "gelu_new", "type_vocab_size": 2}
    parsed = kbert.BertConfig.from_dict(google)
    assert parsed.layer_norm_eps == 1e-12 and parsed.hidden_act == "gelu_new"
    with pytest.raises(ValueError, match="hidden_size"):
        kbert.BertConfig.from_dict({"vocab_size": 10})


def test_hidden_activations_by_hand():
    from kbert.layers.activations import gelu_approximate, hidden_activation

    x = np.array([-3.0, -1.0, -0.1, 0.0, 0.5, 2.0], "float32")
    tanh_gelu = 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x**3)))
    exact_gelu = 0.5 * x * (1 + np.array([math.erf(v / math.sqrt(2)) for v in x]))
    for name in ("gelu_new", "gelu_pytorch_tanh", "gelu_fast", "gelu_approximate"):
        assert hidden_activation(name) is gelu_approximate
        np.testing.assert_allclose(hidden_activation(name)(x), tanh_gelu, atol=1e-6)
    np.testing.assert_allclose(hidden_activation("gelu")(x), exact_gelu, atol=1e-6)
    np.testing.assert_allclose(hidden_activation("relu")(x), np.maximum(x, 0), atol=0)
    with pytest.raises(ValueError, match="hidden_act 'swish'"):
        kbert.BertConfig(hidden_act="swish")
    # Every accepted name builds an encoder (the old "gelu_approximate" string was no Keras activation).
    tiny_encoder(hidden_act="gelu_new")
