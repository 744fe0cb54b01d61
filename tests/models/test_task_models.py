"""Task models learn small synthetic tasks from token ids, and pass the standard layer checks."""

import keras
import numpy as np
import pytest

import kbert
from kbert.tasks.classification_model import BertClassifier
from kbert.tasks.question_answering_model import BertQuestionAnswerer
from kbert.tasks.tagging_model import BertTokenClassifier

VOCAB, SEQ = 24, 10


def encoder(**overrides):
    fields = dict(vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                  intermediate_size=64, max_position_embeddings=16, hidden_dropout_prob=0.0,
                  attention_probs_dropout_prob=0.0)
    fields.update(overrides)
    return kbert.BertEncoder(**fields)


def packed(token_ids):
    """[CLS]=2 ... [SEP]=3 around each row; no padding."""
    n = len(token_ids)
    ids = np.concatenate([np.full((n, 1), 2), token_ids, np.full((n, 1), 3)], axis=1).astype("int32")
    return {"token_ids": ids, "segment_ids": np.zeros_like(ids), "padding_mask": np.ones_like(ids)}


def keyword_data(n, seed):
    """Label 1 iff token 7 appears among 8 random word tokens."""
    rng = np.random.default_rng(seed)
    words = rng.choice([5, 6, 8, 9, 10, 11, 12, 13], size=(n, SEQ - 2))
    labels = rng.integers(0, 2, n)
    slots = rng.integers(0, SEQ - 2, n)
    words[labels == 1, slots[labels == 1]] = 7
    return packed(words), labels.astype("int32")


def test_classifier_learns_keyword_task():
    keras.utils.set_random_seed(0)
    model = BertClassifier(encoder(), num_classes=2)
    model.compile(optimizer=keras.optimizers.Adam(3e-3))
    x, y = keyword_data(512, seed=0)
    model.fit(x, y, epochs=6, batch_size=32, verbose=0)
    x_test, y_test = keyword_data(200, seed=1)
    accuracy = model.evaluate(x_test, y_test, verbose=0, return_dict=True)["accuracy"]
    assert accuracy >= 0.95, accuracy


def test_regressor_learns_keyword_count():
    keras.utils.set_random_seed(0)
    model = BertClassifier(encoder(), num_classes=1)
    model.compile(optimizer=keras.optimizers.Adam(3e-3))
    x, y = keyword_data(512, seed=2)
    target = (x["token_ids"] == 7).sum(1).astype("float32")
    model.fit(x, target, epochs=6, batch_size=32, verbose=0)
    x_test, _ = keyword_data(200, seed=3)
    pred = model.predict(x_test, verbose=0)[:, 0]
    truth = (x_test["token_ids"] == 7).sum(1)
    assert np.abs(pred - truth).mean() < 0.2


def test_tagger_learns_token_classes_and_ignores_minus_100():
    keras.utils.set_random_seed(0)
    rng = np.random.default_rng(0)
    words = rng.integers(5, VOCAB, size=(512, SEQ - 2))
    x = packed(words)
    # The tag of a token is its id mod 3; [CLS]/[SEP] and every third position are not scored.
    labels = (x["token_ids"] % 3).astype("int32")
    labels[:, 0] = labels[:, -1] = -100
    labels[:, 2::3] = -100
    model = BertTokenClassifier(encoder(), num_labels=3)
    model.compile(optimizer=keras.optimizers.Adam(3e-3))
    model.fit(x, labels, epochs=5, batch_size=32, verbose=0)
    result = model.evaluate(x, labels, verbose=0, return_dict=True)
    assert result["accuracy"] >= 0.97, result
    # The loss is the mean cross-entropy over scored positions only.
    logits = model.predict(x, verbose=0).astype("float64")
    log_probs = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    scored = labels != -100
    manual = -np.take_along_axis(log_probs, np.where(scored, labels, 0)[..., None], -1)[..., 0][scored].mean()
    assert np.isclose(result["loss"], manual, rtol=1e-3), (result["loss"], manual)


def test_question_answerer_learns_span_after_marker():
    keras.utils.set_random_seed(0)
    rng = np.random.default_rng(0)
    n = 512
    words = rng.integers(8, VOCAB, size=(n, SEQ - 2))
    start = rng.integers(1, SEQ - 4, n)  # index into words; marker token 5 just before the answer
    words[np.arange(n), start - 1] = 5
    words[words[:, :] == 5] = 9
    words[np.arange(n), start - 1] = 5
    x = packed(words)
    # Answer: the two words after the marker; +1 for [CLS].
    y = {"start_logits": (start + 1).astype("int32"), "end_logits": (start + 2).astype("int32")}
    model = BertQuestionAnswerer(encoder())
    model.compile(optimizer=keras.optimizers.Adam(3e-3))
    model.fit(x, y, epochs=8, batch_size=32, verbose=0)
    out = model.predict(x, verbose=0)
    assert (out["start_logits"].argmax(1) == y["start_logits"]).mean() >= 0.95
    assert (out["end_logits"].argmax(1) == y["end_logits"]).mean() >= 0.95


def test_question_answerer_masks_padding():
    model = BertQuestionAnswerer(encoder())
    x = packed(np.full((2, SEQ - 2), 6))
    x["padding_mask"][:, 6:] = 0
    out = model(x)
    assert np.all(out["start_logits"].numpy()[:, 6:] < -1e3)


def test_feature_based_freezes_encoder():
    e = encoder()
    model = BertClassifier(e, num_classes=2, feature_based=True)
    model.compile()
    assert not e.trainable and len(model.trainable_weights) == 2
    before = [w.numpy().copy() for w in e.weights]
    x, y = keyword_data(64, seed=0)
    model.fit(x, y, epochs=1, batch_size=32, verbose=0)
    assert all(np.array_equal(b, w.numpy()) for b, w in zip(before, e.weights))


@pytest.mark.parametrize("build, learning_rate", [
    (lambda e: BertClassifier(e, num_classes=3), 5e-5),
    (lambda e: BertClassifier(e, num_classes=2, feature_based=True), 1e-3),
    (lambda e: BertTokenClassifier(e, num_labels=4), 5e-5),
    (lambda e: BertQuestionAnswerer(e), 5e-5),
    (lambda e: kbert.BertPretrainer(e, objective="nsp"), 1e-4),
])
def test_compile_default_is_the_one_bert_optimizer(build, learning_rate):
    from kbert.optim import WEIGHT_DECAY_EXCLUDE, AdamW

    model = build(encoder())
    model.compile()
    optimizer = model.optimizer
    assert type(optimizer) is AdamW and optimizer.bias_correction  # PyTorch's rule, not Keras'
    assert float(optimizer.learning_rate) == pytest.approx(learning_rate)
    assert optimizer.weight_decay == 0.01 and optimizer.epsilon == 1e-6
    assert optimizer.global_clipnorm == 1.0 and optimizer.clipnorm is None
    assert optimizer._exclude_from_weight_decay_pattern.pattern == "|".join(WEIGHT_DECAY_EXCLUDE)
