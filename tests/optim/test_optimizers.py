"""create_optimizer: weight-decay exclusion, LAMB, global-norm clipping, accumulation, mixed precision.

The AdamW update rule itself is checked against torch step by step in tests/optim/test_adamw.py.
"""

import keras
import numpy as np
import pytest
import tensorflow as tf

from kbert.optim import WEIGHT_DECAY_EXCLUDE, create_optimizer
from kbert.optim.schedules import LinearWarmupLinearDecay
from kbert.training.mixed_precision import set_mixed_precision


def _model(seed=0):
    keras.utils.set_random_seed(seed)
    inputs = keras.Input((3,))
    # A Dense layer whose *name* contains "layer_norm": its kernel must still be decayed.
    hidden = keras.layers.Dense(4, name="layer_norm_dense")(inputs)
    hidden = keras.layers.LayerNormalization(name="layer_norm")(hidden)
    outputs = keras.layers.Dense(1, name="out")(hidden)
    return keras.Model(inputs, outputs)


@pytest.mark.parametrize("name", ["adamw", "lamb"])
def test_weight_decay_skips_layer_norm_and_bias(name):
    model = _model()
    for variable in model.trainable_variables:
        variable.assign(np.full(variable.shape, 2.0, "float32"))
    lr, wd = 0.1, 0.5
    optimizer = create_optimizer(lr, num_train_steps=10, warmup_steps=0, weight_decay=wd,
                                 optimizer=name, clipnorm=None)
    # Zero gradients: Adam/LAMB move nothing, only the decoupled decay can change a variable.
    zeros = [tf.zeros_like(v) for v in model.trainable_variables]
    optimizer.apply_gradients(zip(zeros, model.trainable_variables))
    after = {v.path: np.asarray(v) for v in model.trainable_variables}
    decayed = 2.0 * (1 - lr * wd)
    np.testing.assert_allclose(after["layer_norm_dense/kernel"], decayed, rtol=1e-6)
    np.testing.assert_allclose(after["out/kernel"], decayed, rtol=1e-6)
    for path in ("layer_norm_dense/bias", "layer_norm/gamma", "layer_norm/beta", "out/bias"):
        np.testing.assert_array_equal(after[path], 2.0, err_msg=path)


def test_exclusion_pattern_on_tf_and_replica_names():
    import re

    pattern = re.compile("|".join(WEIGHT_DECAY_EXCLUDE))
    for name in ("bias", "encoder/layer_0/ln/gamma:0", "x/beta:0", "out/bias/replica_1:0"):
        assert pattern.search(name), name
    for name in ("layer_norm_dense/kernel:0", "bias_adder/kernel:0", "embeddings/embeddings:0",
                 "alphabet/kernel:0", "kernel/replica_1:0"):
        assert not pattern.search(name), name


def test_lamb_trains_a_tiny_model():
    rng = np.random.RandomState(0)
    x = rng.randn(256, 3).astype("float32")
    y = x @ np.array([[1.0], [-2.0], [0.5]], "float32") + 0.3
    keras.utils.set_random_seed(1)
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
    model.compile(create_optimizer(5e-2, num_train_steps=200, warmup_steps=10, optimizer="lamb",
                                   weight_decay=0.0), loss="mse")
    assert type(model.optimizer).__name__ == "Lamb"
    before = model.evaluate(x, y, verbose=0)
    model.fit(x, y, batch_size=32, epochs=25, verbose=0)
    after = model.evaluate(x, y, verbose=0)
    assert after < 0.01 * before, (before, after)


@pytest.mark.parametrize("clipnorm, expected", [(1.0, 0.1), (None, 5.0)])
def test_clipping_bounds_the_update_by_global_norm(clipnorm, expected):
    a = keras.Variable(np.zeros(2, "float32"), name="a")
    b = keras.Variable(np.zeros(2, "float32"), name="b")
    optimizer = create_optimizer(1e-3, 10, 0, weight_decay=0.0, clipnorm=clipnorm)
    grads = [tf.constant([30.0, 0.0]), tf.constant([0.0, 40.0])]  # global norm 50
    optimizer.apply_gradients(zip(grads, [a, b]))
    # Adam's first moment after one step is (1 - beta_1) * clipped gradient: its global norm is
    # (1 - 0.9) * min(50, clipnorm); per-variable clipping would give [0.1, 0] and [0, 0.1].
    momentums = np.concatenate([np.asarray(m) for m in optimizer._momentums])
    np.testing.assert_allclose(np.linalg.norm(momentums), expected, rtol=1e-5)
    np.testing.assert_allclose(momentums, np.array([3, 0, 0, 4]) * expected / 5.0, rtol=1e-5)


def _fit_linear(batch_size, accumulation, x, y, strategy=None):
    keras.utils.set_random_seed(3)
    with (strategy or tf.distribute.get_strategy()).scope():
        model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2, name="linear")])
        model.compile(
            create_optimizer(1e-2, num_train_steps=3, warmup_steps=1, weight_decay=0.01, clipnorm=0.5,
                             gradient_accumulation_steps=accumulation),
            loss="mse",
        )
    model.fit(x, y, batch_size=batch_size, epochs=1, shuffle=False, verbose=0)
    return model


def test_accumulating_k_batches_equals_one_k_times_bigger_batch():
    rng = np.random.RandomState(0)
    x = rng.randn(24, 3).astype("float32")
    y = rng.randn(24, 2).astype("float32")
    big = _fit_linear(8, 1, x, y)  # 3 updates of 8 examples
    accumulated = _fit_linear(2, 4, x, y)  # 12 batches of 2, one update per 4
    assert int(big.optimizer.iterations) == 3
    assert int(accumulated.optimizer.iterations) == 3  # updates: what the schedule and checkpoints count
    assert int(accumulated.optimizer._micro_steps.numpy()) == 12  # batches
    for w_big, w_acc in zip(big.get_weights(), accumulated.get_weights()):
        np.testing.assert_allclose(w_acc, w_big, atol=1e-5, rtol=0)
    keras.utils.set_random_seed(3)
    untrained = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)]).get_weights()
    assert not np.allclose(untrained[0], big.get_weights()[0])  # both actually trained


def test_accumulation_under_one_device_strategy_runs():
    with tf.distribute.OneDeviceStrategy("/cpu:0").scope():
        model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
        model.compile(create_optimizer(1e-2, 4, 1, gradient_accumulation_steps=2), loss="mse")
    model.fit(np.ones((8, 3), "float32"), np.ones((8, 1), "float32"), batch_size=2, verbose=0)
    assert int(model.optimizer.iterations.numpy()) == 2  # 4 batches, 2 updates


def test_accumulation_under_mirrored_strategy_equals_the_big_batch():
    # Keras' own accumulation fails here (merge_call inside a cond); kbert's updates in the cross-replica
    # context. Several replicas: tests/training/test_training_strategy.py, on 2 logical CPUs.
    rng = np.random.RandomState(0)
    x = rng.randn(24, 3).astype("float32")
    y = rng.randn(24, 2).astype("float32")
    big = _fit_linear(8, 1, x, y)
    mirrored = _fit_linear(2, 4, x, y, strategy=tf.distribute.MirroredStrategy(["/cpu:0"]))
    assert int(mirrored.optimizer.iterations.numpy()) == 3
    for w_big, w_acc in zip(big.get_weights(), mirrored.get_weights()):
        np.testing.assert_allclose(w_acc, w_big, atol=1e-5, rtol=0)


def test_accumulation_with_loss_scaling(restore_float32):
    set_mixed_precision("mixed_float16")
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(4), keras.layers.Dense(1)])
    optimizer = create_optimizer(1e-2, 10, 1, gradient_accumulation_steps=2)
    assert isinstance(optimizer, keras.optimizers.LossScaleOptimizer)
    model.compile(optimizer, loss="mse")
    before = [w.copy() for w in model.get_weights()]
    model.fit(np.ones((64, 3), "float32"), np.ones((64, 1), "float32"), batch_size=2, verbose=0)
    # The first batches overflow float16 at scale 2^15 and are skipped (the scale halves); the finite
    # ones accumulate, two per update.
    inner = optimizer.inner_optimizer
    batches = int(inner._micro_steps.numpy())
    assert 2 <= batches < 32 and int(inner.iterations.numpy()) == batches // 2
    assert not np.allclose(before[0], model.get_weights()[0])


@pytest.mark.parametrize("name, kind, bias_correction", [
    ("adamw", "AdamW", True), ("adamw_google", "AdamW", False), ("lamb", "Lamb", None),
])
def test_optimizer_names(name, kind, bias_correction):
    optimizer = create_optimizer(1e-3, 10, 1, optimizer=name)
    assert type(optimizer).__name__ == kind
    assert getattr(optimizer, "bias_correction", None) == bias_correction


def test_constant_rate_without_step_count():
    optimizer = create_optimizer(5e-5)
    assert float(optimizer.learning_rate) == pytest.approx(5e-5)
    assert optimizer.global_clipnorm == 1.0 and optimizer.weight_decay == 0.01


@pytest.fixture
def restore_float32():
    yield
    set_mixed_precision("none")
    assert keras.config.dtype_policy().name == "float32"


@pytest.mark.parametrize("policy, compute", [("mixed_float16", "float16"),
                                             ("mixed_bfloat16", "bfloat16")])
def test_mixed_precision_policy_and_fit_step(policy, compute, restore_float32):
    assert set_mixed_precision(policy) == policy
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(4), keras.layers.Dense(1)])
    optimizer = create_optimizer(1e-2, 10, 1)
    assert model.layers[0].compute_dtype == compute
    assert model.layers[0].kernel.dtype == "float32"  # variables stay float32
    is_scaled = isinstance(optimizer, keras.optimizers.LossScaleOptimizer)
    assert is_scaled == (policy == "mixed_float16")
    model.compile(optimizer, loss="mse")
    history = model.fit(np.ones((4, 3), "float32"), np.ones((4, 1), "float32"), epochs=5, verbose=0)
    assert np.all(np.isfinite(history.history["loss"]))
    updates = int(model.optimizer.iterations)
    if is_scaled:
        # Dynamic loss scaling skips the steps whose scaled gradients overflow float16 and halves
        # the scale each time; the others update.
        assert 1 <= updates <= 5
        assert float(model.optimizer.dynamic_scale) == 2.0**15 / 2 ** (5 - updates)
    else:
        assert updates == 5


def test_set_mixed_precision_rejects_unknown(restore_float32):
    with pytest.raises(ValueError, match="mixed precision"):
        set_mixed_precision("float8")


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(optimizer="sgd"), "optimizer"),
        (dict(weight_decay=-1.0), "weight_decay"),
        (dict(clipnorm=0.0), "clipnorm"),
        (dict(gradient_accumulation_steps=0), "gradient_accumulation_steps"),
    ],
)
def test_bad_arguments_name_the_problem(kwargs, match):
    with pytest.raises(ValueError, match=match):
        create_optimizer(1e-3, 10, 1, **kwargs)


def test_optimizer_uses_bert_schedule():
    optimizer = create_optimizer(1e-3, 100, 10)
    assert isinstance(optimizer._learning_rate, LinearWarmupLinearDecay)
    assert optimizer.global_clipnorm == 1.0 and optimizer.clipnorm is None
    assert optimizer.epsilon == 1e-6 and optimizer.weight_decay == 0.01


def test_auto_mixed_precision_follows_this_machine(restore_float32, capsys):
    from kbert.precision import resolve_mixed_precision

    gpu = bool(tf.config.list_physical_devices("GPU"))
    want = {"none": "float32"}.get(resolve_mixed_precision("auto", gpu=gpu), resolve_mixed_precision("auto", gpu=gpu))
    assert set_mixed_precision("auto") == want
    assert f"mixed precision auto: {want if want != 'float32' else 'none'}" in capsys.readouterr().err
    with pytest.raises(ValueError, match="auto"):
        set_mixed_precision("bfloat16")
