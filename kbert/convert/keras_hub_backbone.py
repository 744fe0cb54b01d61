"""Conversion between keras-hub's `BertBackbone` and kbert's `BertEncoder`.

The two share their building blocks (ReversibleEmbedding, PositionEmbedding, TransformerEncoder), so
weights copy layer by layer. They differ in one respect: keras-hub's BertBackbone hard-codes the tanh
approximation of GELU, while BERT (and kbert) use the exact one; outputs differ by ~4e-3 because of it.
"""

from __future__ import annotations

import keras_hub

from kbert.layers.activations import hidden_activation
from kbert.models.bert_encoder import BertEncoder


def _layer_pairs(backbone, encoder: BertEncoder):
    emb = encoder.embeddings
    yield backbone.token_embedding, emb.token_embedding
    yield backbone.position_embedding, emb.position_embedding
    yield backbone.segment_embedding, emb.segment_embedding
    yield backbone.embeddings_layer_norm, emb.layer_norm
    yield from zip(backbone.transformer_layers, encoder.transformer_layers)
    yield backbone.pooled_dense, encoder.pooler


def _copy(pairs, source_index: int) -> None:
    for pair in pairs:
        source, target = pair[source_index], pair[1 - source_index]
        weights = source.get_weights()
        expected = [tuple(w.shape) for w in target.get_weights()]
        if [tuple(w.shape) for w in weights] != expected:
            raise ValueError(
                f"Cannot copy {source.name} into {target.name}: shapes {[w.shape for w in weights]} "
                f"vs {expected}"
            )
        target.set_weights(weights)


def from_keras_hub(backbone: keras_hub.models.BertBackbone, **overrides) -> BertEncoder:
    """Converts a keras-hub `BertBackbone` (e.g. `BertBackbone.from_preset(...)`) into a `BertEncoder`.

    The result uses BERT's exact GELU, as the original checkpoints were trained with.
    """
    if not isinstance(backbone, keras_hub.models.BertBackbone):
        raise TypeError(f"Expected a keras_hub.models.BertBackbone, got {type(backbone).__name__}")
    fields = dict(
        vocab_size=backbone.vocabulary_size,
        hidden_size=backbone.hidden_dim,
        num_hidden_layers=backbone.num_layers,
        num_attention_heads=backbone.num_heads,
        intermediate_size=backbone.intermediate_dim,
        hidden_dropout_prob=backbone.dropout,
        attention_probs_dropout_prob=backbone.dropout,
        max_position_embeddings=backbone.max_sequence_length,
        type_vocab_size=backbone.num_segments,
    )
    fields.update(overrides)
    encoder = BertEncoder(**fields)
    _copy(_layer_pairs(backbone, encoder), source_index=0)
    return encoder


def to_keras_hub(encoder: BertEncoder, exact_gelu: bool = True) -> keras_hub.models.BertBackbone:
    """Converts a `BertEncoder` into a keras-hub `BertBackbone` holding the same weights.

    Args:
        encoder: the kbert encoder.
        exact_gelu: bool. Replace the backbone's tanh-approximate GELU with the encoder's own activation
            (BERT's exact GELU, or whatever `hidden_act` says), so its outputs match the encoder's. keras-hub serialises its own activation, so a saved backbone reverts to the
            approximation when reloaded.
    """
    if type(encoder) is not BertEncoder:  # an ALBERT or RoBERTa encoder computes another function than BertBackbone
        raise TypeError(f"to_keras_hub converts a BertEncoder into keras-hub's BertBackbone, not a "
                        f"{type(encoder).__name__}")
    config = encoder.bert_config
    backbone = keras_hub.models.BertBackbone(
        vocabulary_size=config.vocab_size,
        num_layers=config.num_hidden_layers,
        num_heads=config.num_attention_heads,
        hidden_dim=config.hidden_size,
        intermediate_dim=config.intermediate_size,
        dropout=config.hidden_dropout_prob,
        max_sequence_length=config.max_position_embeddings,
        num_segments=config.type_vocab_size,
    )
    _copy(_layer_pairs(backbone, encoder), source_index=1)
    if exact_gelu:
        for block in backbone.transformer_layers:
            block._feedforward_intermediate_dense.activation = hidden_activation(config.hidden_act)
    return backbone
