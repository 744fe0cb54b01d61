"""The random sources that benchmarks/studies/xla_dropout.py patches into Keras' dropout are still dropout."""

import keras
import numpy as np
import pytest
import tensorflow as tf
from keras.src.backend.tensorflow import random as tf_random

from benchmarks.studies.xla_dropout import patch_dropout


@pytest.mark.parametrize("source", ["threefry", "hash"])
def test_patched_dropout_keeps_nine_in_ten_scaled_and_draws_a_new_mask_each_call(source, monkeypatch):
    monkeypatch.setattr(tf_random, "dropout", tf_random.dropout)  # puts Keras' own back after the test
    patch_dropout(source)
    layer = keras.layers.Dropout(0.1, seed=3)
    step = tf.function(lambda x: layer(x, training=True), jit_compile=True)
    x = tf.ones((32, 64, 64))
    first, second = step(x).numpy(), step(x).numpy()
    np.testing.assert_allclose(np.unique(first), [0.0, 1 / 0.9], rtol=1e-6)
    for out in (first, second):
        assert abs((out != 0).mean() - 0.9) < 0.005
        # every index of the last axis keeps about 9 in 10 too: the mask has no pattern along it
        assert abs((out != 0).mean(axis=(0, 1)) - 0.9).max() < 0.03
    # two independent masks agree where both keep or both drop: 0.9^2 + 0.1^2 = 0.82
    assert abs(((first != 0) == (second != 0)).mean() - 0.82) < 0.005
    assert np.array_equal(layer(x, training=False).numpy(), x.numpy())
