"""The standard checks for any kbert layer or model, in one call.

    run_standard_checks(model, inputs)

- config round trip: `from_config(get_config())` rebuilds a model whose outputs equal the original's
  once the weights are copied;
- `.keras` save/load gives equal outputs (1e-6);
- symbolic output shapes (`compute_output_spec`) equal eager ones;
- `tf.data` `map` gives the same outputs as a direct call;
- optionally one `fit` step runs and changes the weights.
"""

from __future__ import annotations

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


def run_standard_checks(model, inputs, fit_targets=None, atol: float = 1e-6) -> None:
    expected = model(inputs, training=False)

    clone = model.__class__.from_config(model.get_config())
    clone(inputs, training=False)
    clone.set_weights(model.get_weights())
    assert_outputs_close(expected, clone(inputs, training=False), atol)

    with tempfile.TemporaryDirectory() as tmp:
        path = pathlib.Path(tmp) / "model.keras"
        model.save(path)
        restored = keras.saving.load_model(path)
    assert_outputs_close(expected, restored(inputs, training=False), atol)

    spec_inputs = tf.nest.map_structure(lambda x: keras.KerasTensor(x.shape, x.dtype), inputs)
    spec = model.compute_output_spec(spec_inputs)
    assert [tuple(s.shape) for s in tf.nest.flatten(spec)] == [x.shape for x in _flatten(expected)]

    dataset = tf.data.Dataset.from_tensors(inputs).map(lambda x: model(x, training=False))
    assert_outputs_close(expected, next(iter(dataset)), 1e-5)

    if fit_targets is not None:
        before = [w.copy() for w in model.get_weights()]
        model.fit(inputs, fit_targets, epochs=1, verbose=0)
        after = model.get_weights()
        assert any(not np.array_equal(b, a) for b, a in zip(before, after)), "fit changed no weight"
