"""The ALBERT encoder: factorized embeddings, and transformer blocks shared across layers."""

from __future__ import annotations

import keras

from kbert.config import AlbertConfig
from kbert.layers.transformer_block import BertTransformerBlock
from kbert.models.bert_encoder import BertEncoder


@keras.saving.register_keras_serializable(package="kbert")
class AlbertEncoder(BertEncoder):
    """ALBERT (Lan et al. 2019): BERT's encoder with fewer weights, by two changes.

    token_ids, segment_ids -> BertEmbeddings of width E (embedding_size, 128)
      -> embedding_projection: Dense E -> H
      -> num_hidden_layers hidden layers; layer i runs the blocks of group
         int(i / (num_hidden_layers / num_hidden_groups)), its inner_group_num blocks one after the other
         (as google-research/albert and Hugging Face's `AlbertTransformer`); a block is BERT's post-LN
         `BertTransformerBlock`, and a group's blocks are the same layers, with the same weights, wherever run
      -> sequence_output; pooled_output = tanh(Dense(sequence_output[:, 0]))

    The masked-LM head ties its decoder to the E-wide token table, projecting H -> E first (`BertPretrainer`
    does this with any encoder: its head is as wide as the token table).

    Args:
        embedding_size: int. Width E of the embedding tables.
        num_hidden_groups: int. Groups of blocks with their own weights.
        inner_group_num: int. Blocks per group.
        vocab_size, hidden_size, num_hidden_layers, num_attention_heads, intermediate_size, hidden_act,
        hidden_dropout_prob, attention_probs_dropout_prob, max_position_embeddings, type_vocab_size,
        initializer_range, layer_norm_eps: `BertEncoder`'s, with ALBERT's defaults (`kbert.AlbertConfig`):
            vocab_size 30000, hidden_act "gelu_new", no dropout.
        dtype: a Keras dtype policy name.

    Call arguments and returns: `BertEncoder`'s (`token_ids`, `segment_ids`, `padding_mask` in; `sequence_output`,
    `pooled_output` out).

    Example:
    >>> encoder = AlbertEncoder(vocab_size=50, embedding_size=8, hidden_size=16, num_hidden_layers=4,
    ...                         num_hidden_groups=2, inner_group_num=2, num_attention_heads=2, intermediate_size=32)
    >>> [[block.name for block in blocks] for blocks in encoder.layer_blocks()][1:3]
    [['group_0_inner_layer_0', 'group_0_inner_layer_1'], ['group_1_inner_layer_0', 'group_1_inner_layer_1']]
    >>> ids = keras.ops.ones((2, 8), "int32")
    >>> encoder({"token_ids": ids, "segment_ids": 0 * ids, "padding_mask": ids})["pooled_output"].shape
    TensorShape([2, 16])
    """

    config_class = AlbertConfig

    def __init__(self, dtype=None, **kwargs):
        config, kwargs = self.config_class.split_kwargs(kwargs)
        self._build_encoder(config, dtype, **kwargs)

    def _make_layers(self, config: AlbertConfig, dtype) -> None:
        """`embeddings` (width E), `embedding_projection` (E -> H) and `transformer_groups`, a list of
        num_hidden_groups lists of inner_group_num blocks (named as in keras-hub's `AlbertBackbone`)."""
        self.embeddings = self._make_embeddings(config, dtype, hidden_size=config.embedding_size)
        self.embedding_projection = keras.layers.Dense(
            config.hidden_size, kernel_initializer=self._initializer(config), dtype=dtype,
            name="embedding_projection",
        )
        self.transformer_groups = [
            [self._make_block(config, dtype, name=f"group_{g}_inner_layer_{j}") for j in range(config.inner_group_num)]
            for g in range(config.num_hidden_groups)
        ]

    def _embed(self, token_ids, segment_ids, training=None):
        return self.embedding_projection(super()._embed(token_ids, segment_ids, training=training))

    def layer_blocks(self) -> list[list[BertTransformerBlock]]:
        """The blocks each hidden layer runs: layer i runs group int(i / (num_hidden_layers / num_hidden_groups))."""
        layers, groups = self.bert_config.num_hidden_layers, self.bert_config.num_hidden_groups
        return [self.transformer_groups[int(i / (layers / groups))] for i in range(layers)]
