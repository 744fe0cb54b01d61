"""kbert.optim.AdamW step by step against torch.optim.AdamW, and Google's variant against numpy by hand."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from kbert.optim import AdamW, create_optimizer

STEPS = 100
LR, WD, EPS = 1e-3, 0.01, 1e-6
# Gradient scales from 1 down to 1e-6: with small gradients epsilon dominates the update, which is where
# the rules differ. Kernels and embeddings are decayed; biases and LayerNorm gamma/beta are not.
SHAPES = {
    "dense/kernel": ((4, 3), 1e-5, True),
    "embeddings/embeddings": ((5, 3), 1.0, True),
    "dense/bias": ((3,), 1.0, False),
    "layer_norm/gamma": ((3,), 1e-3, False),
    "layer_norm/beta": ((3,), 1e-6, False),
}


@pytest.fixture(scope="module")
def stream():
    rng = np.random.RandomState(0)
    initial = {k: rng.randn(*shape).astype("float32") for k, (shape, _, _) in SHAPES.items()}
    grads = [{k: (scale * rng.randn(*shape)).astype("float32") for k, (shape, scale, _) in SHAPES.items()}
             for _ in range(STEPS)]
    return initial, grads


def _run_keras(optimizer, initial, grads):
    """Applies the gradient stream; returns final values, per-step values and the rate of each step."""
    variables = {}
    for path, value in initial.items():
        scope, name = path.split("/")
        with keras.name_scope(scope):
            variables[path] = keras.Variable(value, name=name)
    history, rates = [], []
    for step_grads in grads:
        rates.append(float(optimizer.learning_rate))
        optimizer.apply_gradients([(tf.constant(step_grads[k]), variables[k]) for k in SHAPES])
        history.append({k: v.numpy().copy() for k, v in variables.items()})
    return history, rates


def _run_torch(initial, grads, rates, weight_decay=WD):
    torch = pytest.importorskip("torch")
    params = {k: torch.nn.Parameter(torch.tensor(v)) for k, v in initial.items()}
    groups = [{"params": [params[k] for k, (_, _, decay) in SHAPES.items() if decay], "weight_decay": weight_decay},
              {"params": [params[k] for k, (_, _, decay) in SHAPES.items() if not decay], "weight_decay": 0.0}]
    optimizer = torch.optim.AdamW(groups, lr=LR, betas=(0.9, 0.999), eps=EPS)
    history = []
    for rate, step_grads in zip(rates, grads):
        for group in optimizer.param_groups:
            group["lr"] = rate  # the schedule's rate of this step, as float32 gives it
        for k, p in params.items():
            p.grad = torch.tensor(step_grads[k])
        optimizer.step()
        history.append({k: p.detach().numpy().copy() for k, p in params.items()})
    return history


def _max_relative(a, b):
    return max(float(np.max(np.abs(a[k] - b[k]) / np.abs(b[k]))) for k in b)


def test_default_matches_torch_adamw_step_by_step(stream):
    initial, grads = stream
    optimizer = create_optimizer(LR, num_train_steps=STEPS, warmup_steps=10, weight_decay=WD, clipnorm=None)
    ours, rates = _run_keras(optimizer, initial, grads)
    assert rates[0] == 0.0 and rates[10] == pytest.approx(LR * 0.9)  # the schedule is exercised
    reference = _run_torch(initial, grads, rates)
    # What is left is float32 rounding, most of it the fused kernel's `1 - beta_2` (0.00099998713 where
    # PyTorch weighs g^2 by 0.001): 4.7e-7 after 100 steps on this stream.
    for step in (0, 1, 2, 10, 50, STEPS - 1):
        assert _max_relative(ours[step], reference[step]) < 1e-6, step
    final = _max_relative(ours[-1], reference[-1])
    assert final < 1e-6
    moved = _max_relative(initial, reference[-1])
    assert moved > 1e-3, moved  # the weights did move, far more than the tolerance


def test_weight_decay_exclusions_match_torch_groups(stream):
    # Zero gradients leave Adam's step at 0, so only the decay moves a weight: kernels and embeddings
    # shrink by (1 - lr * wd) each step, biases and LayerNorm stay.
    initial, _ = stream
    zeros = [{k: np.zeros_like(v) for k, v in initial.items()}] * 3
    ours, rates = _run_keras(create_optimizer(0.5, weight_decay=0.1, clipnorm=None), initial, zeros)
    reference = _run_torch(initial, zeros, rates, weight_decay=0.1)
    for path, (_, _, decay) in SHAPES.items():
        np.testing.assert_allclose(ours[-1][path], reference[-1][path], rtol=1e-7)
        expected = initial[path] * (1 - 0.5 * 0.1) ** 3 if decay else initial[path]
        np.testing.assert_allclose(ours[-1][path], expected, rtol=1e-6, err_msg=path)


def test_keras_adamw_differs_from_torch_by_far_more(stream):
    # Why the optimizer exists: Keras adds epsilon to sqrt of the biased second moment.
    initial, grads = stream
    optimizer = keras.optimizers.AdamW(learning_rate=LR, weight_decay=WD, epsilon=EPS)
    optimizer.exclude_from_weight_decay(var_names=["bias", "gamma", "beta"])
    keras_history, rates = _run_keras(optimizer, initial, grads)
    reference = _run_torch(initial, grads, rates)
    assert _max_relative(keras_history[-1], reference[-1]) > 1e-3


def test_google_variant_matches_numpy_reference(stream):
    """google-research/bert optimization.py AdamWeightDecayOptimizer, written out in numpy."""
    initial, grads = stream
    optimizer = create_optimizer(LR, num_train_steps=STEPS, warmup_steps=10, weight_decay=WD, clipnorm=None,
                                 optimizer="adamw_google")
    assert isinstance(optimizer, AdamW) and not optimizer.bias_correction
    ours, rates = _run_keras(optimizer, initial, grads)
    params = {k: v.astype("float64") for k, v in initial.items()}
    m = {k: np.zeros_like(v) for k, v in params.items()}
    v = {k: np.zeros_like(p) for k, p in params.items()}
    for rate, step_grads in zip(rates, grads):
        for k, (_, _, decay) in SHAPES.items():
            g = step_grads[k].astype("float64")
            m[k] = 0.9 * m[k] + 0.1 * g
            v[k] = 0.999 * v[k] + 0.001 * g * g
            update = m[k] / (np.sqrt(v[k]) + EPS)
            if decay:
                update += WD * params[k]
            params[k] = params[k] - rate * update
    assert _max_relative(ours[-1], params) < 1e-5
    # And it is not the bias-corrected rule: the first steps differ by up to 1/(1 - beta_1) = 10x.
    assert _max_relative(ours[-1], _run_torch(initial, grads, rates)[-1]) > 1e-3


def test_fused_step_compiled_with_xla_equals_the_graph_step(stream):
    # The update is TensorFlow's fused Adam kernel; XLA (jit_compile, TPUs) has its own lowering of it.
    initial, grads = stream
    finals = []
    for jit_compile in (False, True):
        optimizer = create_optimizer(LR, STEPS, warmup_steps=2, weight_decay=WD, clipnorm=None)
        variables = [keras.Variable(initial[k], name=k.replace("/", "_")) for k in SHAPES]
        optimizer.build(variables)
        apply = tf.function(lambda g: optimizer.apply_gradients(zip(g, variables)),
                            jit_compile=jit_compile)
        for step_grads in grads[:5]:
            apply([tf.constant(step_grads[k]) for k in SHAPES])
        finals.append({k: v.numpy() for k, v in zip(SHAPES, variables)})
    assert _max_relative(finals[1], finals[0]) < 1e-6
    assert _max_relative(initial, finals[0]) > 1e-4  # the five steps moved the weights


def test_config_round_trip_and_serialization():
    optimizer = AdamW(learning_rate=2e-5, weight_decay=0.02, epsilon=1e-8, bias_correction=False,
                      gradient_accumulation_steps=4)
    config = optimizer.get_config()
    assert config["bias_correction"] is False and config["gradient_accumulation_steps"] == 4
    again = keras.optimizers.deserialize(keras.optimizers.serialize(optimizer))
    assert type(again) is AdamW and again.get_config() == config
    with pytest.raises(ValueError, match="AMSGrad"):
        AdamW(amsgrad=True)


def test_loss_scale_wrapper_keeps_the_rule():
    variable = keras.Variable(np.array([1.0, -2.0], "float32"))
    scaled = keras.optimizers.LossScaleOptimizer(create_optimizer(0.1, weight_decay=0.0, clipnorm=None))
    grad = np.array([3.0, -0.5], "float32")
    scaled.build([variable])
    assert scaled.dynamic_scale.numpy() == 2.0**15
    scaled.apply_gradients([(tf.constant(grad * scaled.dynamic_scale.numpy()), variable)])
    # First bias-corrected Adam step: m_hat / sqrt(v_hat) = sign(g), so each weight moves by lr.
    np.testing.assert_allclose(variable.numpy(), [0.9, -1.9], rtol=1e-6)


@pytest.mark.parametrize("name", ["adamw", "lamb"])
def test_row_gradients_of_an_embedding_train_as_dense_ones(name):
    # Without clipping (which densifies), tf.gather's gradient reaches the optimizer as tf.IndexedSlices,
    # with a repeated row; the update must equal the one for the same gradient written out densely.
    table = np.random.RandomState(0).randn(5, 3).astype("float32")
    rows, values = tf.constant([1, 3, 1]), tf.constant(np.arange(9, dtype="float32").reshape(3, 3))
    sparse, dense = keras.Variable(table), keras.Variable(table)
    opt_sparse, opt_dense = (create_optimizer(1e-2, optimizer=name, clipnorm=None) for _ in range(2))
    for _ in range(3):
        opt_sparse.apply_gradients([(tf.IndexedSlices(values, rows, tf.constant([5, 3])), sparse)])
        opt_dense.apply_gradients([(tf.math.unsorted_segment_sum(values, rows, 5), dense)])
    np.testing.assert_allclose(sparse.numpy(), dense.numpy(), rtol=1e-6)
    assert not np.allclose(sparse.numpy(), table)


def test_step_scalars_are_shared_by_every_variable_of_a_dtype():
    """The traced update adds the kernel call (and the decay) per variable, not its scalars: the graph grows
    by the same few ops for each further variable, and the steps equal those of per-variable scalars."""

    def traced_ops(count):
        variables = [keras.Variable(np.full((3,), i + 1.0, np.float32)) for i in range(count)]
        optimizer = AdamW(learning_rate=0.1, weight_decay=0.01)
        optimizer.build(variables)
        grads = [tf.constant([0.5, -1.0, 2.0]) for _ in variables]
        function = tf.function(lambda: optimizer.apply(grads, variables))
        return len(function.get_concrete_function().graph.get_operations())

    per_variable = (traced_ops(12) - traced_ops(4)) / 8
    assert per_variable <= 10, per_variable  # gradient, decay, kernel, handles; 18 with per-variable scalars

    # The same numbers as a step that computes its scalars for each variable (update_step called alone).
    variables = [keras.Variable([1.0, -2.0]), keras.Variable([0.5, 3.0])]
    alone = [keras.Variable(v.numpy()) for v in variables]
    shared, each = AdamW(learning_rate=0.1), AdamW(learning_rate=0.1)
    shared.build(variables)
    each.build(alone)
    grads = [tf.constant([0.3, -0.7]), tf.constant([1.5, 0.2])]
    for _ in range(3):
        shared.apply(grads, variables)
        for grad, variable in zip(grads, alone):
            each.update_step(grad, variable, each.learning_rate)
        each.iterations.assign_add(1)
    for a, b in zip(variables, alone):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
