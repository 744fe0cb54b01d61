"""`kbert.training.xla`: jit_compile is honoured or refused, never silently dropped; XLA's refusals are named."""

import keras
import numpy as np
import pytest
import tensorflow as tf

from kbert.training.xla import (check_fixed_shapes, compile_model, explain_xla_errors, fixed_steps_per_epoch,
                                unsupported_ops)
from tests.xla_checks import xla_compiled_steps


class AsString(keras.layers.Layer):
    """A layer with a string op in its forward pass (no XLA kernel): adds 0 * the digits' count."""

    def call(self, x):
        return x + 0.0 * tf.cast(tf.strings.length(tf.strings.as_string(x)), x.dtype)


class NoJit(keras.layers.Layer):
    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.supports_jit = False

    def call(self, x):
        return x


def _model(*middle):
    inputs = keras.Input((4,))
    x = inputs
    for layer in middle:
        x = layer(x)
    return keras.Model(inputs, keras.layers.Dense(1)(x))


def _data():
    rng = np.random.default_rng(0)
    return tf.data.Dataset.from_tensor_slices((rng.normal(size=(16, 4)).astype("float32"),
                                               rng.normal(size=(16, 1)).astype("float32"))).batch(8)


def test_an_op_without_an_xla_kernel_raises_naming_it():
    model = _model(AsString(name="stringy"))
    compile_model(model, jit_compile=True, optimizer="sgd", loss="mse")
    with pytest.raises(ValueError, match=r"XLA cannot compile the train step: op\(s\) AsString .*stringy") as info:
        with explain_xla_errors():
            model.fit(_data(), epochs=1, verbose=0)
    assert isinstance(info.value.__cause__, tf.errors.InvalidArgumentError)
    # Without XLA the same model trains: it is the compiled step that refuses, with no fallback.
    plain = _model(AsString())
    compile_model(plain, jit_compile=False, optimizer="sgd", loss="mse")
    plain.fit(_data(), epochs=1, verbose=0)
    assert xla_compiled_steps(plain) == []


def test_the_same_step_compiles_without_the_string_op():
    model = _model()
    compile_model(model, jit_compile=True, steps_per_execution=2, optimizer="sgd", loss="mse")
    with explain_xla_errors():
        model.fit(_data(), epochs=1, verbose=0)
    assert model.jit_compile is True and len(xla_compiled_steps(model)) >= 1


def test_keras_silent_fallback_is_refused():
    # Keras' jit_compile setter turns XLA off with only a warning for a layer with supports_jit = False.
    model = _model(NoJit(name="host_only"))
    with pytest.raises(ValueError, match="host_only do not support XLA"):
        compile_model(model, jit_compile=True, optimizer="sgd", loss="mse")
    compile_model(model, jit_compile=False, optimizer="sgd", loss="mse")  # fine without XLA
    assert model.jit_compile is False


def test_other_errors_pass_through():
    with pytest.raises(tf.errors.InvalidArgumentError, match="boom"):
        with explain_xla_errors():
            tf.debugging.assert_equal(1, 2, message="boom")
    with pytest.raises(tf.errors.InvalidArgumentError):  # inactive: even XLA's error is left alone
        with explain_xla_errors(active=False):
            tf.function(lambda x: tf.strings.as_string(x), jit_compile=True)(tf.constant(1))


def test_unsupported_ops_parses_tensorflow_message():
    try:
        tf.function(lambda x: tf.strings.as_string(x) + "!", jit_compile=True)(tf.constant(1))
    except tf.errors.InvalidArgumentError as error:
        ops, nodes = unsupported_ops(error.message)
    assert ops == ["AsString"] and nodes and all("AsString" in n for n in nodes)


def test_fixed_steps_per_epoch():
    assert fixed_steps_per_epoch(100, 8) == 12
    assert fixed_steps_per_epoch(100, 8, 5) == 10
    assert fixed_steps_per_epoch(16, 8, 2) == 2
    with pytest.raises(ValueError, match="7 training rows make no fixed-shape epoch"):
        fixed_steps_per_epoch(7, 8)
    with pytest.raises(ValueError, match="steps_per_execution must be >= 1|>= 1"):
        compile_model(_model(), jit_compile=False, steps_per_execution=0, optimizer="sgd", loss="mse")


def test_check_fixed_shapes():
    check_fixed_shapes(({"token_ids": tf.TensorSpec([8, 16], tf.int32)}, tf.TensorSpec([8], tf.float32)))
    with pytest.raises(ValueError, match=r"0/token_ids is \(None, 16\) int32"):
        check_fixed_shapes(({"token_ids": tf.TensorSpec([None, 16], tf.int32)}, tf.TensorSpec([8], tf.int32)))
    with pytest.raises(ValueError, match="text is .* string"):
        check_fixed_shapes({"text": tf.TensorSpec([8], tf.string)})
    with pytest.raises(ValueError, match="ids is .* int64"):
        check_fixed_shapes({"ids": tf.TensorSpec([8, 4], tf.int64)})
