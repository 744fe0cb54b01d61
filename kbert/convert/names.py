"""Tensor names: Google's TF1 names are the canonical ones; HF names and kbert variables map onto them.

Every format reader returns `{google_name: numpy array}` in Google's layout (Dense kernels are
(in, out), attention projections are (hidden, hidden)); every writer starts from that dict. So each
format needs one name map, and the encoder needs one variable map.
"""

from __future__ import annotations

import re

# Tensors of a pretraining checkpoint that are not encoder weights but the heads that
# `kbert.BertPretrainer` loads.
HEAD_PREFIXES = ("cls/predictions/", "cls/seq_relationship/")

# Training state a Google checkpoint may hold; it is not model weight, so readers skip it.
_TRAINING_STATE = re.compile(r"(^|/)(global_step|adam_[mv]|bad_steps|good_steps|loss_scale)(/|$)")


def is_training_state(name: str) -> bool:
    return bool(_TRAINING_STATE.search(name))


def encoder_variables(encoder) -> dict[str, tuple[object, tuple[int, ...]]]:
    """Maps each Google tensor name to (the encoder's variable, the tensor's shape in Google's layout)."""
    hidden = encoder.bert_config.hidden_size
    emb = encoder.embeddings
    out = {
        "bert/embeddings/word_embeddings": emb.token_embedding.embeddings,
        "bert/embeddings/position_embeddings": emb.position_embedding.position_embeddings,
        "bert/embeddings/token_type_embeddings": emb.segment_embedding.embeddings,
        "bert/embeddings/LayerNorm/gamma": emb.layer_norm.gamma,
        "bert/embeddings/LayerNorm/beta": emb.layer_norm.beta,
        "bert/pooler/dense/kernel": encoder.pooler.kernel,
        "bert/pooler/dense/bias": encoder.pooler.bias,
    }
    for i, block in enumerate(encoder.transformer_layers):
        prefix = f"bert/encoder/layer_{i}/"
        attention = block._self_attention_layer
        parts = {
            "attention/self/query": attention._query_dense,
            "attention/self/key": attention._key_dense,
            "attention/self/value": attention._value_dense,
            "attention/output/dense": attention._output_dense,
            "intermediate/dense": block._feedforward_intermediate_dense,
            "output/dense": block._feedforward_output_dense,
        }
        for name, layer in parts.items():
            out[prefix + name + "/kernel"] = layer.kernel
            out[prefix + name + "/bias"] = layer.bias
        for name, norm in {
            "attention/output/LayerNorm": block._self_attention_layer_norm,
            "output/LayerNorm": block._feedforward_layer_norm,
        }.items():
            out[prefix + name + "/gamma"] = norm.gamma
            out[prefix + name + "/beta"] = norm.beta
    # Keras' multi-head attention keeps heads on their own axis: (H, heads, head_dim) for the Q/K/V
    # kernels, (heads, head_dim, H) for the output. Google's layout folds them into (H, H).
    return {name: (var, _google_shape(name, tuple(var.shape), hidden)) for name, var in out.items()}


def _google_shape(name: str, shape: tuple[int, ...], hidden: int) -> tuple[int, ...]:
    if "/attention/" in name and len(shape) == 3:
        return (shape[0], shape[1] * shape[2]) if "/self/" in name else (shape[0] * shape[1], shape[2])
    if "/attention/self/" in name and len(shape) == 2:  # Q/K/V bias (heads, head_dim)
        return (shape[0] * shape[1],)
    return shape


def hf_to_google(name: str) -> tuple[str, bool] | None:
    """A Hugging Face BERT tensor name -> (Google name, whether to transpose), or None to skip it.

    `transformers` stores Linear weights as (out, in), so every dense kernel is transposed.
    """
    if name.endswith("position_ids") or name.startswith("cls.predictions.decoder."):
        # A buffer, and the MLM decoder, which is tied to the word embeddings (its bias is
        # `cls.predictions.bias`, read below).
        return None
    name = name.removeprefix("bert.")
    path = re.sub(r"\.layer\.(\d+)\.", r"/layer_\1/", name).replace(".", "/")
    if not path.startswith("cls/"):
        path = "bert/" + path
    path = re.sub(r"LayerNorm/weight$", "LayerNorm/gamma", path)
    path = re.sub(r"LayerNorm/bias$", "LayerNorm/beta", path)
    if path == "cls/predictions/bias":
        return "cls/predictions/output_bias", False
    if path.startswith("cls/seq_relationship/"):
        # Google stores this head as (2, H), like torch's Linear weight, so no transpose.
        return path.replace("/weight", "/output_weights").replace("/bias", "/output_bias"), False
    if path.startswith("bert/embeddings/") and path.endswith("_embeddings/weight"):
        return path.removesuffix("/weight"), False
    if path.endswith("/weight"):
        return path.removesuffix("/weight") + "/kernel", True
    return path, False


def google_to_hf(name: str) -> tuple[str, bool]:
    """A Google tensor name -> (Hugging Face `BertForPreTraining`-style name, whether to transpose)."""
    if name == "cls/predictions/output_bias":
        return "cls.predictions.bias", False
    if name.startswith("cls/seq_relationship/"):
        return name.replace("/output_weights", "/weight").replace("/output_bias", "/bias").replace("/", "."), False
    path = name.removeprefix("bert/")
    path = re.sub(r"/layer_(\d+)/", r"/layer/\1/", path)
    transpose = path.endswith("/kernel")
    path = re.sub(r"/(kernel|gamma)$", "/weight", path)
    path = re.sub(r"/beta$", "/bias", path)
    if path.startswith("embeddings/") and path.endswith("_embeddings"):
        path += "/weight"
    return path.replace("/", "."), transpose
