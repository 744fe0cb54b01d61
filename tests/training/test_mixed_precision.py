"""`mixed_precision_scope`: the run's policy inside the block, the caller's back after it, errors included."""

import keras
import pytest

from kbert.training.mixed_precision import mixed_precision_scope, set_mixed_precision


def test_the_callers_policy_comes_back_after_the_block_and_after_an_error():
    set_mixed_precision("mixed_float16")  # a caller with a policy of its own
    try:
        with mixed_precision_scope("mixed_bfloat16") as name:
            assert name == "mixed_bfloat16" == keras.config.dtype_policy().name
            assert keras.layers.Dense(2).compute_dtype == "bfloat16"
        assert keras.config.dtype_policy().name == "mixed_float16"
        with pytest.raises(RuntimeError, match="interrupted"), mixed_precision_scope("none"):
            assert keras.config.dtype_policy().name == "float32"
            raise RuntimeError("interrupted run")
        assert keras.config.dtype_policy().name == "mixed_float16"
        with pytest.raises(ValueError, match="mixed precision must be one of"), mixed_precision_scope("fp8"):
            pass
        assert keras.config.dtype_policy().name == "mixed_float16"
    finally:
        set_mixed_precision("none")
