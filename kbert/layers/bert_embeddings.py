"""BERT's input embeddings: token + learned position + segment, then LayerNorm and dropout (RoBERTa's positions,
ALBERT's narrower tables and DistilBERT's missing segment table are options of the same layer)."""

from __future__ import annotations

import keras
import keras_hub


@keras.saving.register_keras_serializable(package="kbert")
class BertEmbeddings(keras.layers.Layer):
    """Sums token, position and segment embeddings, then normalises them (Devlin et al. 2018, fig. 2).

    The token table is a keras-hub `ReversibleEmbedding`, so the masked-LM head can reuse it as its output
    projection (`reverse=True`), tying input and output embeddings as BERT does. ALBERT's embeddings are
    these with `hidden_size` its embedding size E; RoBERTa's count positions after the padding id
    (`pad_token_id`); DistilBERT's have no segment table (`type_vocab_size` 0).

    Args:
        vocab_size: int. Rows of the token table.
        hidden_size: int. Width of every embedding.
        max_position_embeddings: int. Rows of the learned position table; the longest input.
        type_vocab_size: int. Rows of the segment table (2: sentence A, sentence B); 0: no segment table, and
            `segment_ids` are not read (DistilBERT).
        layer_norm_eps: float. LayerNorm epsilon.
        dropout: float. Dropout rate after the LayerNorm.
        initializer_range: float. Standard deviation of the truncated-normal initializer.
        pad_token_id: int or None. None: token i takes position row i (BERT, ALBERT). An id: RoBERTa's
            positions, as Hugging Face computes them from the ids: a real token takes row pad_token_id + 1 + (the
            real tokens before it), a `pad_token_id` token row pad_token_id.

    Call arguments:
        token_ids: int tensor (batch, seq).
        segment_ids: int tensor (batch, seq).

    Returns:
        Float tensor (batch, seq, hidden_size).

    Example:
    >>> layer = BertEmbeddings(vocab_size=10, hidden_size=4, max_position_embeddings=8)
    >>> layer(keras.ops.zeros((1, 3), "int32"), keras.ops.zeros((1, 3), "int32")).shape
    TensorShape([1, 3, 4])
    >>> roberta = BertEmbeddings(vocab_size=10, hidden_size=4, max_position_embeddings=8, pad_token_id=1)
    >>> roberta.position_ids(keras.ops.convert_to_tensor([[0, 5, 6, 2, 1, 1]])).numpy().tolist()
    [[2, 3, 4, 5, 1, 1]]
    """

    def __init__(
        self,
        vocab_size: int,
        hidden_size: int,
        max_position_embeddings: int = 512,
        type_vocab_size: int = 2,
        layer_norm_eps: float = 1e-12,
        dropout: float = 0.1,
        initializer_range: float = 0.02,
        pad_token_id: int | None = None,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.vocab_size = vocab_size
        self.hidden_size = hidden_size
        self.max_position_embeddings = max_position_embeddings
        self.type_vocab_size = type_vocab_size
        self.layer_norm_eps = layer_norm_eps
        self.dropout = dropout
        self.initializer_range = initializer_range
        self.pad_token_id = pad_token_id

        def initializer():
            return keras.initializers.TruncatedNormal(stddev=initializer_range)

        self.token_embedding = keras_hub.layers.ReversibleEmbedding(
            vocab_size, hidden_size, embeddings_initializer=initializer(),
            dtype=self.dtype_policy, name="token_embedding",
        )
        self.position_embedding = keras_hub.layers.PositionEmbedding(
            max_position_embeddings, initializer=initializer(),
            dtype=self.dtype_policy, name="position_embedding",
        )
        self.segment_embedding = keras.layers.Embedding(
            type_vocab_size, hidden_size, embeddings_initializer=initializer(),
            dtype=self.dtype_policy, name="segment_embedding",
        ) if type_vocab_size else None
        self.layer_norm = keras.layers.LayerNormalization(
            epsilon=layer_norm_eps, dtype=self.dtype_policy, name="layer_norm"
        )
        self.dropout_layer = keras.layers.Dropout(dropout, dtype=self.dtype_policy, name="dropout")

    def build(self, token_ids_shape, segment_ids_shape=None):
        self.token_embedding.build(token_ids_shape)
        if self.segment_embedding is not None:
            self.segment_embedding.build(token_ids_shape)
        embedded_shape = tuple(token_ids_shape) + (self.hidden_size,)
        self.position_embedding.build(embedded_shape)
        self.layer_norm.build(embedded_shape)
        self.built = True

    def position_ids(self, token_ids):
        """RoBERTa's position ids (batch, seq): the count of real tokens up to and including each real token, after
        `pad_token_id`; `pad_token_id` for padding tokens."""
        real = keras.ops.cast(keras.ops.not_equal(token_ids, self.pad_token_id), "int32")
        return keras.ops.cumsum(real, axis=1) * real + self.pad_token_id

    def call(self, token_ids, segment_ids, training=None):
        tokens = self.token_embedding(token_ids)
        if self.pad_token_id is None:
            # PositionEmbedding returns rows 0..seq-1 of its table, broadcast over the batch.
            positions = self.position_embedding(tokens)
        else:
            positions = self.position_embedding(tokens, positions=self.position_ids(token_ids))
        x = tokens + positions
        if self.segment_embedding is not None:
            x = x + self.segment_embedding(segment_ids)
        x = self.layer_norm(x)
        return self.dropout_layer(x, training=training)

    def compute_output_shape(self, token_ids_shape, segment_ids_shape=None):
        return tuple(token_ids_shape) + (self.hidden_size,)

    def get_config(self):
        config = super().get_config()
        config.update(
            vocab_size=self.vocab_size,
            hidden_size=self.hidden_size,
            max_position_embeddings=self.max_position_embeddings,
            type_vocab_size=self.type_vocab_size,
            layer_norm_eps=self.layer_norm_eps,
            dropout=self.dropout,
            initializer_range=self.initializer_range,
            pad_token_id=self.pad_token_id,
        )
        return config
