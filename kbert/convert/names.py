"""Tensor names: Google's TF1 names are the canonical ones; HF names and kbert variables map onto them.

Every format reader returns `{google_name: numpy array}` in Google's layout (Dense kernels are
(in, out), attention projections are (hidden, hidden)); every writer starts from that dict. So each
format needs one name map per family, and each family's encoder one variable map:

    BERT     bert/encoder/layer_{i}/attention/self/query/kernel                   (Google's BERT release)
    ALBERT   bert/encoder/transformer/group_{g}/inner_group_{j}/attention_1/...  (Google's ALBERT release)
    RoBERTa     roberta/encoder/layer_{i}/attention/self/query/kernel             (BERT's, under its own scope)
    DistilBERT  distilbert/encoder/layer_{i}/attention/self/query/kernel          (BERT's, under its own scope)

RoBERTa and DistilBERT were never released in Google's layout; their tensors take BERT's names under a scope of
their own, so such a checkpoint can never fill a BERT encoder (the same weights compute another function there).
DistilBERT's Hugging Face names (`transformer.layer.{i}.attention.q_lin`, ...) are mapped by a table, as ALBERT's.
"""

from __future__ import annotations

import math
import re

# Tensors of a pretraining checkpoint that are not encoder weights but the heads that
# `kbert.BertPretrainer` loads.
HEAD_PREFIXES = ("cls/predictions/", "cls/seq_relationship/")

# The scope of each family's encoder tensors in Google's names.
SCOPES = {"bert": "bert", "albert": "bert", "roberta": "roberta", "distilbert": "distilbert"}

# Training state a Google checkpoint may hold; it is not model weight, so readers skip it.
_TRAINING_STATE = re.compile(r"(^|/)(global_step|adam_[mv]|bad_steps|good_steps|loss_scale)(/|$)")

# A transformer block's weights by role -> their Google names in a BERT layer and in an ALBERT inner group, and
# their Hugging Face names in an `AlbertLayer`.
BERT_BLOCK = {
    "query": "attention/self/query", "key": "attention/self/key", "value": "attention/self/value",
    "attention_output": "attention/output/dense", "attention_norm": "attention/output/LayerNorm",
    "intermediate": "intermediate/dense", "output": "output/dense", "output_norm": "output/LayerNorm",
}
ALBERT_BLOCK = {
    "query": "attention_1/self/query", "key": "attention_1/self/key", "value": "attention_1/self/value",
    "attention_output": "attention_1/output/dense", "attention_norm": "LayerNorm",
    "intermediate": "ffn_1/intermediate/dense", "output": "ffn_1/intermediate/output/dense",
    "output_norm": "LayerNorm_1",
}
DISTILBERT_HF_BLOCK = {
    "query": "attention.q_lin", "key": "attention.k_lin", "value": "attention.v_lin",
    "attention_output": "attention.out_lin", "attention_norm": "sa_layer_norm",
    "intermediate": "ffn.lin1", "output": "ffn.lin2", "output_norm": "output_layer_norm",
}
ALBERT_HF_BLOCK = {
    "query": "attention.query", "key": "attention.key", "value": "attention.value",
    "attention_output": "attention.dense", "attention_norm": "attention.LayerNorm",
    "intermediate": "ffn", "output": "ffn_output", "output_norm": "full_layer_layer_norm",
}
_NORMS = ("attention_norm", "output_norm")


def is_training_state(name: str) -> bool:
    return bool(_TRAINING_STATE.search(name))


def is_pooler(name: str) -> bool:
    """Whether a Google name is the pooler's (`bert/pooler/dense/kernel`, ...), which masked-LM checkpoints lack."""
    return bool(re.fullmatch(r"[a-z]+/pooler/dense/(kernel|bias)", name))


# === Encoder variables ===

def encoder_variables(encoder) -> dict[str, tuple[object, tuple[int, ...]]]:
    """Maps each Google tensor name to (the encoder's variable, the tensor's shape in Google's layout)."""
    model_type = encoder.bert_config.model_type
    scope = SCOPES[model_type]
    emb = encoder.embeddings
    out = {
        f"{scope}/embeddings/word_embeddings": emb.token_embedding.embeddings,
        f"{scope}/embeddings/position_embeddings": emb.position_embedding.position_embeddings,
        **({f"{scope}/embeddings/token_type_embeddings": emb.segment_embedding.embeddings}
           if emb.segment_embedding is not None else {}),  # DistilBERT has no segment table
        f"{scope}/embeddings/LayerNorm/gamma": emb.layer_norm.gamma,
        f"{scope}/embeddings/LayerNorm/beta": emb.layer_norm.beta,
        f"{scope}/pooler/dense/kernel": encoder.pooler.kernel,
        f"{scope}/pooler/dense/bias": encoder.pooler.bias,
    }
    out = {name: (variable, tuple(variable.shape)) for name, variable in out.items()}
    if model_type == "albert":
        projection = encoder.embedding_projection
        out[f"{scope}/encoder/embedding_hidden_mapping_in/kernel"] = (projection.kernel, tuple(projection.kernel.shape))
        out[f"{scope}/encoder/embedding_hidden_mapping_in/bias"] = (projection.bias, tuple(projection.bias.shape))
        for g, group in enumerate(encoder.transformer_groups):
            for j, block in enumerate(group):
                out.update(_block_variables(block, f"{scope}/encoder/transformer/group_{g}/inner_group_{j}/",
                                            ALBERT_BLOCK))
    else:
        for i, block in enumerate(encoder.transformer_layers):
            out.update(_block_variables(block, f"{scope}/encoder/layer_{i}/", BERT_BLOCK))
    return out


def _block_variables(block, prefix: str, role_names: dict[str, str]) -> dict[str, tuple[object, tuple[int, ...]]]:
    """A `BertTransformerBlock`'s variables under Google's names `prefix + role_names[role] + /kernel` (...)."""
    attention = block._self_attention_layer
    dense = {
        "query": attention._query_dense, "key": attention._key_dense, "value": attention._value_dense,
        "attention_output": attention._output_dense,
        "intermediate": block._feedforward_intermediate_dense, "output": block._feedforward_output_dense,
    }
    norms = {"attention_norm": block._self_attention_layer_norm, "output_norm": block._feedforward_layer_norm}
    out = {}
    for role, layer in dense.items():
        kernel, bias = tuple(layer.kernel.shape), tuple(layer.bias.shape)
        # Keras' multi-head attention keeps heads on their own axis: (H, heads, head_dim) for the Q/K/V
        # kernels, (heads, head_dim, H) for the output. Google's layout folds them into (H, H).
        if role in ("query", "key", "value"):
            kernel, bias = (kernel[0], math.prod(kernel[1:])), (math.prod(bias),)
        elif role == "attention_output":
            kernel = (math.prod(kernel[:-1]), kernel[-1])
        out[prefix + role_names[role] + "/kernel"] = (layer.kernel, kernel)
        out[prefix + role_names[role] + "/bias"] = (layer.bias, bias)
    for role, norm in norms.items():
        out[prefix + role_names[role] + "/gamma"] = (norm.gamma, tuple(norm.gamma.shape))
        out[prefix + role_names[role] + "/beta"] = (norm.beta, tuple(norm.beta.shape))
    return out


# === Hugging Face names ===

# RoBERTa's masked-LM head in Hugging Face's names -> the same tensor in `BertForPreTraining`'s names.
_ROBERTA_HEAD = (("lm_head.dense.", "cls.predictions.transform.dense."),
                 ("lm_head.layer_norm.", "cls.predictions.transform.LayerNorm."),
                 ("lm_head.decoder.", "cls.predictions.decoder."), ("lm_head.bias", "cls.predictions.bias"))


def hf_to_google(name: str, model_type: str = "bert") -> tuple[str, bool] | None:
    """A Hugging Face tensor name of the family -> (Google name, whether to transpose), or None to skip it.

    `transformers` stores Linear weights as (out, in), so every dense kernel is transposed. A name the family
    does not know is returned as it is, so that loading names it as an unexpected tensor.
    """
    if model_type == "albert":
        return _albert_hf_to_google(name)
    if model_type == "distilbert":
        return _distilbert_hf_to_google(name)
    for hf, bert in _ROBERTA_HEAD if model_type == "roberta" else ():
        if name.startswith(hf):
            name = bert + name.removeprefix(hf)
    if name.endswith("position_ids") or name.startswith("cls.predictions.decoder."):
        # A buffer, and the MLM decoder, which is tied to the word embeddings (its bias is
        # `cls.predictions.bias`, read below).
        return None
    scope = SCOPES[model_type]
    name = name.removeprefix(f"{model_type}.")
    path = re.sub(r"\.layer\.(\d+)\.", r"/layer_\1/", name).replace(".", "/")
    if not path.startswith("cls/"):
        path = f"{scope}/" + path
    path = re.sub(r"LayerNorm/weight$", "LayerNorm/gamma", path)
    path = re.sub(r"LayerNorm/bias$", "LayerNorm/beta", path)
    if path == "cls/predictions/bias":
        return "cls/predictions/output_bias", False
    if path.startswith("cls/seq_relationship/"):
        # Google stores this head as (2, H), like torch's Linear weight, so no transpose.
        return path.replace("/weight", "/output_weights").replace("/bias", "/output_bias"), False
    if path.startswith(f"{scope}/embeddings/") and path.endswith("_embeddings/weight"):
        return path.removesuffix("/weight"), False
    if path.endswith("/weight"):
        return path.removesuffix("/weight") + "/kernel", True
    return path, False


def google_to_hf(name: str, model_type: str = "bert") -> tuple[str, bool]:
    """A Google tensor name -> (Hugging Face name, whether to transpose): `BertForPreTraining`'s (BERT),
    `AlbertForPreTraining`'s (ALBERT), `RobertaForMaskedLM`'s (RoBERTa) or `DistilBertForMaskedLM`'s (DistilBERT),
    without the encoder's prefix."""
    if model_type == "albert":
        return _albert_google_to_hf(name)
    if model_type == "distilbert":
        return _distilbert_google_to_hf(name)
    if name == "cls/predictions/output_bias":
        hf, transpose = "cls.predictions.bias", False
    elif name.startswith("cls/seq_relationship/"):
        hf, transpose = name.replace("/output_weights", "/weight").replace("/output_bias", "/bias").replace(
            "/", "."), False
    else:
        path = name.removeprefix(f"{SCOPES[model_type]}/")
        path = re.sub(r"/layer_(\d+)/", r"/layer/\1/", path)
        transpose = path.endswith("/kernel")
        path = re.sub(r"/(kernel|gamma)$", "/weight", path)
        path = re.sub(r"/beta$", "/bias", path)
        if path.startswith("embeddings/") and path.endswith("_embeddings"):
            path += "/weight"
        hf = path.replace("/", ".")
    for roberta, bert in _ROBERTA_HEAD if model_type == "roberta" else ():
        if hf.startswith(bert):
            hf = roberta + hf.removeprefix(bert)
    return hf, transpose


def _tensor_pairs(google: str, hf: str, kind: str) -> list[tuple[str, str, bool]]:
    """(Google name, Hugging Face name, transpose) of each tensor of a dense layer, a LayerNorm or a table."""
    if kind == "dense":
        return [(google + "/kernel", hf + ".weight", True), (google + "/bias", hf + ".bias", False)]
    if kind == "norm":
        return [(google + "/gamma", hf + ".weight", False), (google + "/beta", hf + ".bias", False)]
    return [(google, hf + ".weight", False)]


# ALBERT's tensors outside the blocks, and a block's inside its inner group: (Google, Hugging Face, transpose).
_ALBERT_PAIRS = [
    *_tensor_pairs("bert/embeddings/word_embeddings", "embeddings.word_embeddings", "table"),
    *_tensor_pairs("bert/embeddings/position_embeddings", "embeddings.position_embeddings", "table"),
    *_tensor_pairs("bert/embeddings/token_type_embeddings", "embeddings.token_type_embeddings", "table"),
    *_tensor_pairs("bert/embeddings/LayerNorm", "embeddings.LayerNorm", "norm"),
    *_tensor_pairs("bert/encoder/embedding_hidden_mapping_in", "encoder.embedding_hidden_mapping_in", "dense"),
    *_tensor_pairs("bert/pooler/dense", "pooler", "dense"),
    *_tensor_pairs("cls/predictions/transform/dense", "predictions.dense", "dense"),
    *_tensor_pairs("cls/predictions/transform/LayerNorm", "predictions.LayerNorm", "norm"),
    ("cls/predictions/output_bias", "predictions.bias", False),
    ("cls/seq_relationship/output_weights", "sop_classifier.classifier.weight", False),  # (2, H) in both
    ("cls/seq_relationship/output_bias", "sop_classifier.classifier.bias", False),
]
_ALBERT_BLOCK_PAIRS = [pair for role, google in ALBERT_BLOCK.items()
                       for pair in _tensor_pairs(google, ALBERT_HF_BLOCK[role], "norm" if role in _NORMS else "dense")]
# A block's names: the indices (group, inner layer) between a prefix and the block's own tensor name.
_ALBERT_BLOCK_NAMES = ("bert/encoder/transformer/group_{}/inner_group_{}/",
                       "encoder.albert_layer_groups.{}.albert_layers.{}.")


def _albert_hf_to_google(name: str) -> tuple[str, bool] | None:
    name = name.removeprefix("albert.")
    if name.endswith(("position_ids", "token_type_ids")) or name.startswith("predictions.decoder."):
        return None  # buffers, and the decoder tied to the word embeddings and `predictions.bias`
    return _albert_lookup(name, from_google=False) or (name, False)


def _albert_google_to_hf(name: str) -> tuple[str, bool]:
    found = _albert_lookup(name, from_google=True)
    if found is None:
        raise ValueError(f"{name} is no ALBERT tensor that Hugging Face's AlbertForPreTraining holds")
    return found


def _albert_lookup(name: str, from_google: bool) -> tuple[str, bool] | None:
    """(the other format's name, transpose) of an ALBERT tensor named in Google's format or Hugging Face's."""
    return _table_lookup(name, from_google, _ALBERT_PAIRS, _ALBERT_BLOCK_PAIRS, _ALBERT_BLOCK_NAMES)


def _table_lookup(name: str, from_google: bool, pairs: list, block_pairs: list,
                  block_names: tuple[str, str]) -> tuple[str, bool] | None:
    """(the other format's name, transpose) of a tensor of a family whose names map by table: `pairs` outside the
    blocks, `block_pairs` inside one, each (Google, Hugging Face, transpose); `block_names` are the (Google,
    Hugging Face) prefixes of a block's tensors, with a `{}` for each of its indices."""
    google_prefix, hf_prefix = block_names
    pattern = re.escape(google_prefix if from_google else hf_prefix).replace(re.escape("{}"), r"(\d+)")
    block = re.match(f"^{pattern}(.+)$", name)
    inner = block.groups()[-1] if block else name
    for google, hf, transpose in block_pairs if block else pairs:
        if (google if from_google else hf) != inner:
            continue
        if not block:
            return (hf if from_google else google), transpose
        indices = block.groups()[:-1]
        return (hf_prefix.format(*indices) + hf if from_google else google_prefix.format(*indices) + google), transpose
    return None


# DistilBERT's tensors outside the blocks, and a block's, as BERT's Google names under the `distilbert` scope and
# Hugging Face's `DistilBertForMaskedLM` names (without its `distilbert.` prefix): (Google, Hugging Face, transpose).
# Its masked-LM head is BERT's: dense, activation, LayerNorm, then the token table transposed plus a bias.
_DISTILBERT_PAIRS = [
    *_tensor_pairs("distilbert/embeddings/word_embeddings", "embeddings.word_embeddings", "table"),
    *_tensor_pairs("distilbert/embeddings/position_embeddings", "embeddings.position_embeddings", "table"),
    *_tensor_pairs("distilbert/embeddings/LayerNorm", "embeddings.LayerNorm", "norm"),
    *_tensor_pairs("cls/predictions/transform/dense", "vocab_transform", "dense"),
    *_tensor_pairs("cls/predictions/transform/LayerNorm", "vocab_layer_norm", "norm"),
    ("cls/predictions/output_bias", "vocab_projector.bias", False),
]
_DISTILBERT_BLOCK_PAIRS = [pair for role, google in BERT_BLOCK.items()
                           for pair in _tensor_pairs(google, DISTILBERT_HF_BLOCK[role],
                                                     "norm" if role in _NORMS else "dense")]
_DISTILBERT_BLOCK_NAMES = ("distilbert/encoder/layer_{}/", "transformer.layer.{}.")


def _distilbert_hf_to_google(name: str) -> tuple[str, bool] | None:
    name = name.removeprefix("distilbert.")
    if name.endswith("position_ids") or name == "vocab_projector.weight":
        return None  # a buffer, and the decoder tied to the word embeddings (its bias is read)
    return _distilbert_lookup(name, from_google=False) or (name, False)


def _distilbert_google_to_hf(name: str) -> tuple[str, bool]:
    found = _distilbert_lookup(name, from_google=True)
    if found is None:
        raise ValueError(f"{name} is no DistilBERT tensor that Hugging Face's DistilBertForMaskedLM holds")
    return found


def _distilbert_lookup(name: str, from_google: bool) -> tuple[str, bool] | None:
    """(the other format's name, transpose) of a DistilBERT tensor named in Google's style or Hugging Face's."""
    return _table_lookup(name, from_google, _DISTILBERT_PAIRS, _DISTILBERT_BLOCK_PAIRS, _DISTILBERT_BLOCK_NAMES)
