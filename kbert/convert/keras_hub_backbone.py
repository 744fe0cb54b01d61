"""Conversion between keras-hub's backbones and kbert's encoders, family by family:

    keras_hub.models.BertBackbone      <->  kbert.BertEncoder
    keras_hub.models.AlbertBackbone    <->  kbert.AlbertEncoder
    keras_hub.models.RobertaBackbone   <->  kbert.RobertaEncoder

Each pair shares its building blocks (ReversibleEmbedding, PositionEmbedding, TransformerEncoder), so weights
copy layer by layer, and the families differ from keras-hub's in these respects:

- BERT: keras-hub's BertBackbone hard-codes the tanh approximation of GELU, while BERT (and kbert) use the exact
  one; outputs differ by ~4e-3 because of it.
- ALBERT: the same function (keras-hub's tanh GELU is ALBERT's). keras-hub runs group i // (num_layers /
  num_groups) at layer i, so it needs num_hidden_layers divisible by num_hidden_groups (its `num_groups`);
  `inner_group_num` is its `num_inner_repetitions`.
- RoBERTa: keras-hub's backbone has no segment table and no pooler, and takes position rows 0, 1, 2, ... from the
  start of each row, on a table without the first pad_token_id + 1 rows of Hugging Face's (kbert's) table, which
  counts positions from the ids: a real token takes row pad_token_id + 1 + (the real tokens before it), a padding
  token row pad_token_id. The two agree on every real token of a right-padded (or unpadded) batch; the outputs at
  padding positions differ, and a left-padded batch differs throughout.
"""

from __future__ import annotations

import warnings

import keras_hub
import numpy as np

from kbert.layers.activations import hidden_activation
from kbert.models.bert_encoder import BertEncoder
from kbert.models.families import encoder_class

_BACKBONES = {"bert": keras_hub.models.BertBackbone, "albert": keras_hub.models.AlbertBackbone,
              "roberta": keras_hub.models.RobertaBackbone}
# The LayerNorm epsilon each keras-hub backbone fixes.
_EPSILONS = {"bert": 1e-12, "albert": 1e-12, "roberta": 1e-5}


def _layer_pairs(backbone, encoder: BertEncoder, family: str):
    """(keras-hub layer, kbert layer) pairs holding the same weights in the same layout. RoBERTa's position
    and segment tables are not among them (`_roberta_positions`)."""
    emb = encoder.embeddings
    yield backbone.token_embedding, emb.token_embedding
    if family != "roberta":
        yield backbone.position_embedding, emb.position_embedding
        yield backbone.segment_embedding, emb.segment_embedding
    yield backbone.embeddings_layer_norm, emb.layer_norm
    if family == "albert":
        yield backbone.embeddings_projection, encoder.embedding_projection
        for ours, theirs in zip(backbone.transformer_layers, encoder.transformer_groups, strict=True):
            yield from zip(ours, theirs, strict=True)
    else:
        yield from zip(backbone.transformer_layers, encoder.transformer_layers, strict=True)
    if family != "roberta":
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


def _roberta_positions(backbone, encoder: BertEncoder, to_keras_hub: bool) -> None:
    """keras-hub's row i is kbert's row pad_token_id + 1 + i, with kbert's one segment row (added to every token)
    folded in; from keras-hub, kbert's first pad_token_id + 1 rows (never a real token's) and its segment row are
    zeros."""
    start = encoder.bert_config.pad_token_id + 1
    theirs = backbone.embeddings.position_embedding.position_embeddings
    ours, segments = encoder.embeddings.position_embedding.position_embeddings, encoder.embeddings.segment_embedding
    if to_keras_hub:
        theirs.assign(ours.numpy()[start:] + segments.embeddings.numpy()[0])
    else:
        table = np.zeros(ours.shape, ours.dtype)
        table[start:] = theirs.numpy()
        ours.assign(table)
        segments.embeddings.assign(np.zeros(segments.embeddings.shape, segments.embeddings.dtype))


def from_keras_hub(backbone, **overrides) -> BertEncoder:
    """Converts a keras-hub `BertBackbone`, `AlbertBackbone` or `RobertaBackbone` into kbert's encoder of the family.

    Args:
        backbone: the keras-hub backbone, e.g. `keras_hub.models.AlbertBackbone.from_preset(...)`.
        **overrides: config fields to change, e.g. `hidden_dropout_prob` or RoBERTa's `pad_token_id` (1).

    Returns:
        A `BertEncoder`, `AlbertEncoder` or `RobertaEncoder` holding the backbone's weights. From a BertBackbone it
        uses BERT's exact GELU, as the original checkpoints were trained with; from an AlbertBackbone it computes
        the backbone's function; from a RobertaBackbone it computes the backbone's function on the real tokens of
        a right-padded batch (see the module's notes), and its pooler, which keras-hub's backbone lacks, starts
        fresh, with a warning.

    Example:
    >>> backbone = keras_hub.models.AlbertBackbone(vocabulary_size=50, num_layers=2, num_heads=2, embedding_dim=8,
    ...                                            hidden_dim=16, intermediate_dim=32, max_sequence_length=16)
    >>> type(from_keras_hub(backbone)).__name__
    'AlbertEncoder'
    """
    family = next((name for name, cls in _BACKBONES.items() if type(backbone) is cls), None)
    if family is None:
        raise TypeError(f"Expected a keras_hub.models.BertBackbone, AlbertBackbone or RobertaBackbone, got "
                        f"{type(backbone).__name__}")
    fields = dict(
        vocab_size=backbone.vocabulary_size,
        hidden_size=backbone.hidden_dim,
        num_hidden_layers=backbone.num_layers,
        num_attention_heads=backbone.num_heads,
        intermediate_size=backbone.intermediate_dim,
        hidden_dropout_prob=backbone.dropout,
        attention_probs_dropout_prob=backbone.dropout,
        max_position_embeddings=backbone.max_sequence_length,
    )
    if family == "roberta":
        start = overrides.get("pad_token_id", encoder_class(family).config_class.pad_token_id) + 1
        fields.update(type_vocab_size=1, max_position_embeddings=backbone.max_sequence_length + start)
    else:
        fields.update(type_vocab_size=backbone.num_segments)
    if family == "albert":
        fields.update(embedding_size=backbone.embedding_dim, num_hidden_groups=backbone.num_groups,
                      inner_group_num=backbone.num_inner_repetitions)
    fields.update(overrides)
    encoder = encoder_class(family)(**fields)
    _copy(_layer_pairs(backbone, encoder, family), source_index=0)
    if family == "roberta":
        _roberta_positions(backbone, encoder, to_keras_hub=False)
        warnings.warn("keras-hub's RobertaBackbone has no pooler: pooled_output comes from a fresh, random dense "
                      "layer until fine-tuned")
    return encoder


def to_keras_hub(encoder: BertEncoder, exact_gelu: bool = True):
    """Converts a kbert encoder into the keras-hub backbone of its family, holding the same weights.

    Args:
        encoder: a `BertEncoder` (-> `BertBackbone`), `AlbertEncoder` (-> `AlbertBackbone`) or `RobertaEncoder`
            (-> `RobertaBackbone`).
        exact_gelu: bool. Give the backbone's blocks the encoder's own activation (`hidden_act`: BERT's exact GELU),
            so its outputs match the encoder's; else keep keras-hub's (BERT's then differ by ~4e-3). keras-hub
            serialises its own activation, so a saved backbone reverts to it when reloaded.

    Returns:
        The backbone. A RoBERTa backbone matches the encoder's sequence output on the real tokens of a
        right-padded batch only, and has no pooled output (see the module's notes).

    Raises:
        ValueError: an encoder the family's backbone cannot hold: an ALBERT encoder whose num_hidden_layers is not
            divisible by num_hidden_groups, a RoBERTa encoder with more than one segment, a LayerNorm epsilon
            other than the one keras-hub fixes.

    Example:
    >>> from kbert.models.roberta_encoder import RobertaEncoder
    >>> encoder = RobertaEncoder(vocab_size=50, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
    ...                          intermediate_size=32, max_position_embeddings=18)
    >>> to_keras_hub(encoder).max_sequence_length
    16
    """
    config = encoder.bert_config
    family = config.model_type
    if type(encoder) is not encoder_class(family) or family not in _BACKBONES:
        raise TypeError(f"to_keras_hub converts kbert's BertEncoder, AlbertEncoder or RobertaEncoder, not a "
                        f"{type(encoder).__name__}")
    backbone_class = _BACKBONES[family]
    if config.layer_norm_eps != _EPSILONS[family]:
        raise ValueError(f"keras-hub's {backbone_class.__name__} fixes LayerNorm epsilon {_EPSILONS[family]}; this "
                         f"encoder's is {config.layer_norm_eps}")
    fields = dict(vocabulary_size=config.vocab_size, num_layers=config.num_hidden_layers,
                  num_heads=config.num_attention_heads, hidden_dim=config.hidden_size,
                  intermediate_dim=config.intermediate_size, dropout=config.hidden_dropout_prob,
                  max_sequence_length=config.max_position_embeddings)
    if family == "roberta":
        if config.type_vocab_size != 1:
            raise ValueError(f"keras-hub's RobertaBackbone has no segments; this encoder has type_vocab_size "
                             f"{config.type_vocab_size}")
        fields.update(max_sequence_length=config.max_sequence_length)
    else:
        fields.update(num_segments=config.type_vocab_size)
    if family == "albert":
        if config.num_hidden_layers % config.num_hidden_groups:
            raise ValueError(f"keras-hub's AlbertBackbone needs num_hidden_layers ({config.num_hidden_layers}) "
                             f"divisible by num_hidden_groups ({config.num_hidden_groups})")
        fields.update(embedding_dim=config.embedding_size, num_groups=config.num_hidden_groups,
                      num_inner_repetitions=config.inner_group_num)
    backbone = backbone_class(**fields)
    _copy(_layer_pairs(backbone, encoder, family), source_index=1)
    if family == "roberta":
        _roberta_positions(backbone, encoder, to_keras_hub=True)
    if exact_gelu:
        for block in _blocks(backbone):
            block._feedforward_intermediate_dense.activation = hidden_activation(config.hidden_act)
    return backbone


def _blocks(backbone) -> list:
    """The distinct transformer blocks of a keras-hub backbone (an AlbertBackbone's, group after group)."""
    layers = backbone.transformer_layers
    return [block for group in layers for block in group] if isinstance(layers[0], list) else list(layers)
