"""A model's copy that computes in another precision: the same weights, the encoder under that precision's
Keras dtype policy (`kbert.precision.keras_policy`)."""

from __future__ import annotations

import keras

from kbert.models.bert_encoder import BertEncoder
from kbert.precision import keras_policy, resolve_precision


def with_precision(model: keras.Model, precision: str) -> keras.Model:
    """`model` rebuilt with its encoder computing in `precision`, holding the same (float32) weights.

    In bfloat16 (Keras' mixed policy, variables in float32) every matmul and einsum of the encoder runs in
    bfloat16 (oneDNN's AMX or AVX512-BF16 kernels where the CPU has them); LayerNorm, softmax and GELU work
    in float32 and round once (`BertTransformerBlock`), and the task heads keep their float32 dense layer,
    so logits stay float32.
    Rebuilding from the config, rather than exporting under a global policy, keeps the caller's policy
    untouched.

    Args:
        model: a `BertEncoder` or a task model holding one as its `encoder` (`BertClassifier`, ...).
        precision: "float32" or "bfloat16". A model already in `precision` is returned itself.

    Returns:
        The model in `precision`.

    Raises:
        ValueError: an unknown precision. TypeError: a model without a kbert encoder.

    Example:
    >>> encoder = BertEncoder(vocab_size=30, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
    ...                       intermediate_size=32)
    >>> with_precision(encoder, "bfloat16").embeddings.compute_dtype
    'bfloat16'
    """
    policy = keras_policy(resolve_precision(precision)[0])
    encoder = model if isinstance(model, BertEncoder) else getattr(model, "encoder", None)
    if not isinstance(encoder, BertEncoder):
        raise TypeError(f"expected a BertEncoder or a kbert task model, got {type(model).__name__}")
    if encoder.embeddings.dtype_policy.name == policy:
        return model
    config = model.get_config()
    if encoder is model:
        config["dtype"] = policy
    else:
        config["encoder"] = {**config["encoder"], "config": {**config["encoder"]["config"], "dtype": policy}}
    rebuilt = type(model).from_config(config)
    rebuilt.set_weights(model.get_weights())
    return rebuilt
