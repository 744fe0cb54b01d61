"""The standard checks for any kbert layer or model, in one call.

    run_standard_checks(model, inputs)
    run_standard_checks(layer, inputs, call_kwargs={"padding_mask": mask}, fit_targets=targets)

- it builds, and `get_config()` is plain data: `from_config(get_config())` gives the same config, and a
  model whose outputs equal the original's once the weights are copied;
- `.keras` save/load gives equal outputs (1e-6); a layer is saved inside a functional model of itself;
- symbolic output shapes (`compute_output_spec`) equal eager ones;
- `tf.data` `map` gives the same outputs as a direct call, on the whole batch and example by example;
- optionally one `fit` step runs and changes the weights (a layer is fitted inside its functional model,
  with a mean squared error against `fit_targets`).

`inputs` is the first call argument (a tensor or a dict of tensors); `call_kwargs` are further tensor
arguments passed by keyword (`segment_ids`, `padding_mask`). Every tensor has the batch first.
"""

from __future__ import annotations

import json
import pathlib
import tempfile

import keras
import numpy as np
import tensorflow as tf


def _flatten(outputs) -> list[np.ndarray]:
    return [np.asarray(x) for x in tf.nest.flatten(outputs)]


def assert_outputs_close(a, b, atol: float = 1e-6) -> None:
    flat_a, flat_b = _flatten(a), _flatten(b)
    assert len(flat_a) == len(flat_b)
    for x, y in zip(flat_a, flat_b):
        assert x.shape == y.shape, (x.shape, y.shape)
        np.testing.assert_allclose(x, y, atol=atol, rtol=0)


def _functional(layer: keras.layers.Layer, inputs, call_kwargs: dict) -> tuple[keras.Model, list]:
    """A functional model that only calls `layer`, and its inputs as the flat list it takes."""

    def symbolic(x):
        x = np.asarray(x)
        return keras.Input(shape=x.shape[1:], dtype=x.dtype.name)

    symbolic_inputs = tf.nest.map_structure(symbolic, inputs)
    symbolic_kwargs = {name: symbolic(value) for name, value in call_kwargs.items()}
    outputs = layer(symbolic_inputs, **symbolic_kwargs)
    flat = tf.nest.flatten(symbolic_inputs) + [symbolic_kwargs[name] for name in call_kwargs]
    values = tf.nest.flatten(inputs) + [call_kwargs[name] for name in call_kwargs]
    return keras.Model(flat, outputs), values


def _check_config_round_trip(model, inputs, call_kwargs: dict, expected, atol: float) -> None:
    config = model.get_config()
    json.dumps(config)  # plain data: a live object in the config raises here
    clone = model.__class__.from_config(config)
    clone(inputs, training=False, **call_kwargs)
    assert clone.get_config() == config, "from_config(get_config()) changed the config"
    clone.set_weights(model.get_weights())
    assert_outputs_close(expected, clone(inputs, training=False, **call_kwargs), atol)


def _check_save_and_load(model, inputs, call_kwargs: dict, expected, atol: float) -> None:
    if isinstance(model, keras.Model):
        saved, values = model, inputs
    else:
        saved, values = _functional(model, inputs, call_kwargs)
    with tempfile.TemporaryDirectory() as tmp:
        path = pathlib.Path(tmp) / "model.keras"
        saved.save(path)
        restored = keras.saving.load_model(path)
    assert_outputs_close(expected, restored(values, training=False), atol)


def _check_tf_data(model, inputs, call_kwargs: dict, expected) -> None:
    def call(x, kwargs):
        return model(x, training=False, **kwargs)

    element = (inputs, call_kwargs) if call_kwargs else (inputs,)
    batched = tf.data.Dataset.from_tensors(element).map(lambda *e: call(e[0], e[1] if call_kwargs else {}))
    assert_outputs_close(expected, next(iter(batched)), 1e-5)

    def one_example(*e):
        def with_batch(t):
            return tf.expand_dims(t, 0)

        kwargs = tf.nest.map_structure(with_batch, e[1]) if call_kwargs else {}
        outputs = call(tf.nest.map_structure(with_batch, e[0]), kwargs)
        return tf.nest.map_structure(lambda t: t[0], outputs)

    batch = len(tf.nest.flatten(inputs)[0])
    unbatched = tf.data.Dataset.from_tensor_slices(element).map(one_example).batch(batch)
    assert_outputs_close(expected, next(iter(unbatched)), 1e-5)


def _check_fit(model, inputs, call_kwargs: dict, fit_inputs, fit_targets) -> None:
    before = [w.copy() for w in model.get_weights()]
    if isinstance(model, keras.Model):
        model.fit(inputs if fit_inputs is None else fit_inputs, fit_targets, epochs=1, verbose=0)
    else:
        wrapper, values = _functional(model, inputs, call_kwargs)
        wrapper.compile(optimizer=keras.optimizers.SGD(0.1), loss="mean_squared_error")
        wrapper.fit(values, fit_targets, epochs=1, verbose=0)
    after = model.get_weights()
    assert any(not np.array_equal(b, a) for b, a in zip(before, after)), "fit changed no weight"


def run_standard_checks(model, inputs, fit_targets=None, atol: float = 1e-6, call_kwargs: dict | None = None,
                        fit_inputs=None) -> None:
    """Runs every standard check on a layer or model; see the module docstring.

    Args:
        model: a `keras.layers.Layer` or `keras.Model`. A model that `fit`s must be compiled.
        inputs: the first call argument: an array or a dict of arrays, batch first.
        fit_targets: the `y` of the `fit` step; with neither this nor `fit_inputs`, no `fit` runs.
        atol: tolerance of the outputs after a config round trip and after `.keras` save/load.
        call_kwargs: further call arguments by keyword, arrays batch first (a layer's `padding_mask`).
        fit_inputs: the `x` of the `fit` step of a model, if not `inputs` (features that carry the labels).
    """
    call_kwargs = dict(call_kwargs or {})
    expected = model(inputs, training=False, **call_kwargs)
    assert model.built

    _check_config_round_trip(model, inputs, call_kwargs, expected, atol)
    _check_save_and_load(model, inputs, call_kwargs, expected, atol)

    def spec(x):
        return keras.KerasTensor(np.shape(x), np.asarray(x).dtype.name)

    output_spec = model.compute_output_spec(tf.nest.map_structure(spec, inputs),
                                            **{name: spec(value) for name, value in call_kwargs.items()})
    assert [tuple(s.shape) for s in tf.nest.flatten(output_spec)] == [x.shape for x in _flatten(expected)]

    _check_tf_data(model, inputs, call_kwargs, expected)

    if fit_targets is not None or fit_inputs is not None:
        _check_fit(model, inputs, call_kwargs, fit_inputs, fit_targets)
