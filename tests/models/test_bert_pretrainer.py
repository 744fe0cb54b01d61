"""BertPretrainer against transformers' BertForPreTraining, and its training loop."""

import keras
import numpy as np
import pytest
import tensorflow as tf

import kbert
from kbert.convert.checkpoints import load_pretrainer, save_pretrained
from kbert.models.bert_pretrainer import BertPretrainer, masked_lm_loss_and_hits


@pytest.fixture(scope="module")
def hf_pretraining_dir(tmp_path_factory):
    """A tiny randomly initialised HF BertForPreTraining, saved as safetensors, plus its outputs."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    torch.manual_seed(0)
    config = transformers.BertConfig(vocab_size=40, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                                     intermediate_size=64, max_position_embeddings=32)
    model = transformers.BertForPreTraining(config).eval()
    with torch.no_grad():  # non-zero biases and LayerNorm offsets, so a mapping error shows
        for p in model.parameters():
            p.add_(0.02 * torch.randn_like(p))
    path = tmp_path_factory.mktemp("hf_pretraining")
    model.save_pretrained(str(path))
    rng = np.random.default_rng(0)
    ids = rng.integers(5, 40, (3, 12))
    segments = np.zeros_like(ids)
    segments[:, 6:] = 1
    mask = np.ones_like(ids)
    mask[2, 9:] = 0
    with torch.no_grad():
        out = model(input_ids=torch.tensor(ids), token_type_ids=torch.tensor(segments),
                    attention_mask=torch.tensor(mask))
    inputs = {"token_ids": ids.astype("int32"), "segment_ids": segments.astype("int32"),
              "padding_mask": mask.astype("int32")}
    return path, inputs, out.prediction_logits.numpy(), out.seq_relationship_logits.numpy()


def test_heads_match_transformers(hf_pretraining_dir, tmp_path):
    path, inputs, mlm_reference, nsp_reference = hf_pretraining_dir
    pretrainer = load_pretrainer(path, objective="nsp")
    positions = np.array([[1, 4, 7], [0, 2, 11], [3, 5, 8]], "int32")
    out = pretrainer({**inputs, "masked_positions": positions})
    expected = np.take_along_axis(mlm_reference, positions[..., None], axis=1)
    np.testing.assert_allclose(out["mlm_logits"], expected, atol=1e-4)
    np.testing.assert_allclose(out["sentence_logits"], nsp_reference, atol=1e-4)

    # Saved in Google's names (kbert layout) and in HF's, the heads come back identical.
    for fmt in ("kbert", "hf"):
        save_pretrained(pretrainer, tmp_path / fmt, format=fmt)
        again = load_pretrainer(tmp_path / fmt, objective="nsp")
        np.testing.assert_allclose(again({**inputs, "masked_positions": positions})["mlm_logits"],
                                   out["mlm_logits"], atol=1e-5)
    # And the encoder alone loads from a pretraining checkpoint: the heads are recognised, not "extra".
    kbert.load_pretrained(tmp_path / "kbert")


def test_misshaped_head_is_named():
    encoder = kbert.BertEncoder(vocab_size=30, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                                intermediate_size=32)
    pretrainer = BertPretrainer(encoder, objective="sop")
    tensors = pretrainer.head_tensors()
    tensors["cls/seq_relationship/output_weights"] = np.zeros((3, 16), np.float32)
    with pytest.raises(ValueError, match="cls/seq_relationship/output_weights"):
        pretrainer.load_head_tensors(tensors)
    del tensors["cls/predictions/output_bias"]
    with pytest.raises(ValueError, match="output_bias"):
        pretrainer.load_head_tensors(tensors)
    with pytest.raises(ValueError, match="objective"):
        BertPretrainer(encoder, objective="mlm")


def features(n=64, seq=12, predictions=3, seed=0):
    rng = np.random.default_rng(seed)
    ids = rng.integers(5, 30, (n, seq)).astype("int32")
    positions = np.sort(rng.choice(np.arange(1, seq), (n, predictions)), axis=1).astype("int32")
    return {
        "token_ids": ids, "segment_ids": np.zeros_like(ids), "padding_mask": np.ones_like(ids),
        "masked_positions": positions,
        "masked_ids": np.take_along_axis(ids, positions, 1),
        "masked_weights": np.array([[1, 1, 0]] * n, "float32"),
        "next_sentence_label": rng.integers(0, 2, n).astype("int32"),
    }


def test_loss_is_weighted_mlm_plus_sentence():
    encoder = kbert.BertEncoder(vocab_size=30, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                                intermediate_size=32, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    pretrainer = BertPretrainer(encoder, objective="nsp")
    pretrainer.compile()
    x = features(n=8)
    result = pretrainer.evaluate(tf.data.Dataset.from_tensor_slices(x).batch(8), verbose=0, return_dict=True)
    out = pretrainer(x)

    def cross_entropy(logits, labels):
        logits = np.asarray(logits, np.float64)
        log_z = np.log(np.exp(logits).sum(-1))
        return log_z - np.take_along_axis(logits, labels[..., None], -1)[..., 0]

    mlm = cross_entropy(out["mlm_logits"], x["masked_ids"])
    mlm = (mlm * x["masked_weights"]).sum() / x["masked_weights"].sum()  # padding predictions ignored
    sentence = cross_entropy(out["sentence_logits"], x["next_sentence_label"]).mean()
    assert np.isclose(result["mlm_loss"], mlm, rtol=1e-4)
    assert np.isclose(result["loss"], mlm + sentence, rtol=1e-4)
    hits = np.argmax(out["mlm_logits"], -1) == x["masked_ids"]
    accuracy = (hits * x["masked_weights"]).sum() / x["masked_weights"].sum()
    assert np.isclose(result["mlm_accuracy"], accuracy, atol=1e-6)


def test_loss_of_an_empty_batch_is_finite():
    """A replica's share of a short last batch can be empty: its loss is 0, not NaN."""
    encoder = kbert.BertEncoder(vocab_size=30, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                                intermediate_size=32)
    pretrainer = BertPretrainer(encoder, objective="nsp")
    x = {k: v[:0] for k, v in features(n=4).items()}
    loss = pretrainer.compute_loss(x=x, y_pred=pretrainer(x, training=False), training=False)
    assert float(loss) == 0.0


@pytest.mark.parametrize("weights", [[[1, 1, 0], [1, 0, 0]], [[0, 0, 0], [0, 0, 0]]])
def test_masked_lm_loss_and_hits_against_numpy(weights):
    """The XLA-compiled loss, its hits and its gradient, eager and inside a plain `tf.function`."""
    rng = np.random.default_rng(0)
    logits = rng.normal(size=(2, 3, 7)).astype("float32")
    logits[1, 2] = 0.0  # a tie: arg-max takes the first word, as Keras' accuracy does
    ids = np.array([[3, 0, 6], [int(np.argmax(logits[1, 0])), 2, 0]], "int32")
    weights = np.array(weights, "float32")

    probs = np.exp(logits - logits.max(-1, keepdims=True))
    probs /= probs.sum(-1, keepdims=True)
    per_token = -np.log(np.take_along_axis(probs, ids[..., None], -1)[..., 0])
    denominator = max(weights.sum(), 1.0)
    expected_gradient = (probs - np.eye(7)[ids]) * (weights / denominator)[..., None]

    def loss_and_gradient(logits):
        logits = tf.convert_to_tensor(logits)
        with tf.GradientTape() as tape:
            tape.watch(logits)
            loss, hits = masked_lm_loss_and_hits(ids, logits, weights)
        return loss, hits, tape.gradient(loss, logits)

    for run in (loss_and_gradient, tf.function(loss_and_gradient)):
        loss, hits, gradient = run(logits)
        assert np.isclose(loss, (per_token * weights).sum() / denominator, rtol=1e-5)
        np.testing.assert_array_equal(hits, np.argmax(logits, -1) == ids)
        np.testing.assert_allclose(gradient, expected_gradient, atol=1e-6)


def test_fit_learns_copy_task():
    keras.utils.set_random_seed(0)
    encoder = kbert.BertEncoder(vocab_size=30, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                                intermediate_size=64, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    pretrainer = BertPretrainer(encoder, objective="none")
    pretrainer.compile(optimizer=keras.optimizers.Adam(3e-3))
    # The masked positions are not actually masked, so the model can learn to copy the token there.
    data = tf.data.Dataset.from_tensor_slices(features(n=256)).shuffle(256, seed=0).batch(32).repeat()
    history = pretrainer.fit(data, steps_per_epoch=40, epochs=3, verbose=0)
    assert history.history["mlm_accuracy"][-1] > 0.9
    assert "sentence_accuracy" not in history.history
