"""The RoBERTa encoder: BERT's, with positions counted after the padding id."""

from __future__ import annotations

import keras

from kbert.config import RobertaConfig
from kbert.layers.bert_embeddings import BertEmbeddings
from kbert.models.bert_encoder import BertEncoder


@keras.saving.register_keras_serializable(package="kbert")
class RobertaEncoder(BertEncoder):
    """RoBERTa (Liu et al. 2019): BERT's encoder, retrained with other data and settings, and other positions.

    The layers, weights and function are `BertEncoder`'s except for the position ids: a real token takes row
    pad_token_id + 1 + (the real tokens before it) of the position table, a padding token row pad_token_id (as
    Hugging Face's `RobertaModel` computes them from the ids), so 514 rows serve 512 tokens. RoBERTa has one
    segment (type_vocab_size 1): segment_ids are all 0.

    Args:
        pad_token_id: int. The padding token's id (1).
        vocab_size, hidden_size, num_hidden_layers, num_attention_heads, intermediate_size, hidden_act,
        hidden_dropout_prob, attention_probs_dropout_prob, max_position_embeddings, type_vocab_size,
        initializer_range, layer_norm_eps: `BertEncoder`'s, with RoBERTa's defaults (`kbert.RobertaConfig`):
            vocab_size 50265, max_position_embeddings 514, type_vocab_size 1, layer_norm_eps 1e-5.
        dtype: a Keras dtype policy name.

    Call arguments and returns: `BertEncoder`'s (`token_ids`, `segment_ids`, `padding_mask` in; `sequence_output`,
    `pooled_output` out).

    Example:
    >>> encoder = RobertaEncoder(vocab_size=50, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
    ...                          intermediate_size=32, max_position_embeddings=18)
    >>> ids = keras.ops.convert_to_tensor([[0, 7, 8, 2, 1, 1]])  # <s> ... </s> <pad> <pad>
    >>> out = encoder({"token_ids": ids, "segment_ids": 0 * ids, "padding_mask": keras.ops.cast(ids != 1, "int32")})
    >>> out["sequence_output"].shape, encoder.bert_config.max_sequence_length
    (TensorShape([1, 6, 16]), 16)
    """

    config_class = RobertaConfig

    def __init__(self, dtype=None, **kwargs):
        config, kwargs = self.config_class.split_kwargs(kwargs)
        self._build_encoder(config, dtype, **kwargs)

    def _make_embeddings(self, config: RobertaConfig, dtype, **options) -> BertEmbeddings:
        return super()._make_embeddings(config, dtype, pad_token_id=config.pad_token_id, **options)
