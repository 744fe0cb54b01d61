"""The sinusoid table of benchmarks/studies/sinusoid_init.py, checked against values worked by hand."""

import math

import numpy as np

from benchmarks.studies.sinusoid_init import sinusoids


def test_sinusoid_table_values():
    table = sinusoids(50, 8)
    assert table.shape == (50, 8) and table.dtype == np.float32
    np.testing.assert_allclose(table[0], [0, 1, 0, 1, 0, 1, 0, 1], atol=1e-7)  # sin 0, cos 0
    # Position 3, pair 1 of 4: angle 3 / 10000^(2/8) = 0.3.
    np.testing.assert_allclose(table[3, 2:4], [math.sin(0.3), math.cos(0.3)], rtol=1e-6)
    # Every pair is a point on the unit circle, and one position ahead is the same rotation everywhere.
    np.testing.assert_allclose(table[:, 0::2] ** 2 + table[:, 1::2] ** 2, 1.0, rtol=1e-5)
    np.testing.assert_allclose(table[1:, 0] * table[:-1, 1] - table[1:, 1] * table[:-1, 0], math.sin(1.0), rtol=1e-5)
