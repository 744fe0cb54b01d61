"""`BertTaskModel.compile()`: "auto" comes from the defaults each head declares once; given values win."""

import keras
import numpy as np
import pytest

import kbert
from kbert.models.bert_task_model import BertTaskModel

SEQ = 6


def encoder():
    return kbert.BertEncoder(vocab_size=20, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                             intermediate_size=32, max_position_embeddings=8, hidden_dropout_prob=0.0,
                             attention_probs_dropout_prob=0.0)


def inputs(n=4, seed=0):
    ids = np.random.default_rng(seed).integers(5, 20, size=(n, SEQ)).astype("int32")
    return {"token_ids": ids, "segment_ids": np.zeros_like(ids), "padding_mask": np.ones_like(ids)}


class PooledScore(BertTaskModel):
    """A one-output head that declares only its loss (no metrics, no weights)."""

    def __init__(self, encoder, dropout=0.0, feature_based=False, **kwargs):
        self._build_head_layers(encoder, 1, dropout, name="score")
        self._build_task_model(encoder, dropout, feature_based,
                               lambda x, encoded: self.output_dense(encoded["pooled_output"]), **kwargs)

    def default_loss(self):
        return keras.losses.MeanAbsoluteError()


class NoDefaults(PooledScore):
    default_loss = BertTaskModel.default_loss


def log_softmax(logits):
    logits = logits.astype("float64")
    return logits - np.log(np.exp(logits).sum(-1, keepdims=True))


def test_auto_takes_the_declared_loss_and_the_default_optimizer():
    model = PooledScore(encoder())
    model.compile()
    x, y = inputs(), np.arange(4, dtype="float32")[:, None]
    result = model.evaluate(x, y, verbose=0, return_dict=True)
    assert set(result) == {"loss"}  # no metrics declared, none added
    predicted = model.predict(x, verbose=0)
    assert result["loss"] == pytest.approx(np.abs(predicted - y).mean(), rel=1e-5)
    assert type(model.optimizer).__name__ == "AdamW"
    assert float(model.optimizer.learning_rate) == pytest.approx(5e-5)


def test_given_values_replace_the_defaults():
    model = PooledScore(encoder())
    model.compile(optimizer=keras.optimizers.SGD(0.1), loss="mse",
                  metrics=[keras.metrics.MeanAbsoluteError(name="mae")])
    x, y = inputs(), np.arange(4, dtype="float32")[:, None]
    result = model.evaluate(x, y, verbose=0, return_dict=True)
    predicted = model.predict(x, verbose=0)
    assert result["loss"] == pytest.approx(np.square(predicted - y).mean(), rel=1e-5)
    assert result["mae"] == pytest.approx(np.abs(predicted - y).mean(), rel=1e-5)
    assert type(model.optimizer) is keras.optimizers.SGD


def test_a_head_without_a_default_loss_says_so():
    model = NoDefaults(encoder())
    with pytest.raises(NotImplementedError, match="NoDefaults declares no default loss"):
        model.compile()
    model.compile(loss="mse")  # an explicit loss needs no default
    assert model.loss == "mse"


def test_classifier_and_regressor_defaults():
    x = inputs(4)
    labels = np.array([0, 2, 1, 2], "int32")
    classifier = kbert.BertClassifier(encoder(), 3, dropout=0.0)
    classifier.compile()
    result = classifier.evaluate(x, labels, verbose=0, return_dict=True)
    logits = classifier.predict(x, verbose=0)
    assert result["loss"] == pytest.approx(-log_softmax(logits)[np.arange(4), labels].mean(), rel=1e-4)
    assert result["accuracy"] == pytest.approx((logits.argmax(-1) == labels).mean())

    regressor = kbert.BertClassifier(encoder(), 1, dropout=0.0)
    regressor.compile()
    scores = np.array([[0.5], [1.0], [2.0], [3.5]], "float32")
    result = regressor.evaluate(x, scores, verbose=0, return_dict=True)
    predicted = regressor.predict(x, verbose=0)
    assert result["loss"] == pytest.approx(np.square(predicted - scores).mean(), rel=1e-4)
    assert result["mae"] == pytest.approx(np.abs(predicted - scores).mean(), rel=1e-4)


def test_question_answerer_loss_is_the_mean_of_the_start_and_end_cross_entropies():
    model = kbert.BertQuestionAnswerer(encoder(), dropout=0.0)
    model.compile()
    x = inputs(4)
    y = {"start_logits": np.array([1, 2, 3, 4]), "end_logits": np.array([2, 2, 4, 5])}
    result = model.evaluate(x, y, verbose=0, return_dict=True)
    out = model.predict(x, verbose=0)
    ce = {k: -log_softmax(out[k])[np.arange(4), y[k]].mean() for k in y}
    assert result["loss"] == pytest.approx(0.5 * ce["start_logits"] + 0.5 * ce["end_logits"], rel=1e-4)
    for k in y:
        assert result[f"{k}_accuracy"] == pytest.approx((out[k].argmax(-1) == y[k]).mean())
    # Weights given with the default loss replace the default weights.
    model.compile(loss_weights={"start_logits": 1.0, "end_logits": 0.0})
    result = model.evaluate(x, y, verbose=0, return_dict=True)
    assert result["loss"] == pytest.approx(ce["start_logits"], rel=1e-4)


@pytest.mark.parametrize("build", [
    lambda encoder: kbert.BertClassifier(encoder, 3),
    lambda encoder: kbert.BertTokenClassifier(encoder, 4),
    lambda encoder: kbert.BertQuestionAnswerer(encoder),
    lambda encoder: kbert.BertSentenceEmbedder(encoder, pooling="mean"),
], ids=["classify", "tag", "qa", "embed"])
def test_head_model_on_probed_outputs_is_the_model(build):
    keras.utils.set_random_seed(0)
    model = build(kbert.BertEncoder(vocab_size=30, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                                    intermediate_size=32, max_position_embeddings=16))
    ids = np.array([[2, 7, 8, 9, 3, 0], [2, 5, 3, 0, 0, 0], [2, 6, 7, 8, 9, 3]], np.int32)
    inputs = {"token_ids": ids, "segment_ids": 0 * ids, "padding_mask": (ids > 0).astype(np.int32)}
    inside = model.encoder.probe(inputs)
    given = [keras.ops.convert_to_tensor(inputs[name]) for name in ("token_ids", "segment_ids", "padding_mask")]
    got = model.head_model()([*given, inside["sequence_output"], inside["pooled_output"]], training=False)
    want = model(inputs, training=False)
    real = inputs["padding_mask"].astype(bool)
    for name in (sorted(want) if isinstance(want, dict) else [None]):
        a, b = (got[name], want[name]) if name else (got, want)
        a, b = np.asarray(a), np.asarray(b)
        if a.ndim > 1 and a.shape[1] == ids.shape[1]:  # per token: the real tokens' (padding is masked alike)
            a, b = a[real], b[real]
        np.testing.assert_allclose(a, b, atol=1e-5)
