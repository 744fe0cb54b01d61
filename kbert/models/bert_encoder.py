"""The BERT encoder: embeddings, a stack of post-LN transformer blocks, and the [CLS] pooler."""

from __future__ import annotations

import warnings
from typing import Any

import keras
import tensorflow as tf

from kbert.config import BertConfig
from kbert.layers import token_packing
from kbert.layers.activations import hidden_activation
from kbert.layers.bert_embeddings import BertEmbeddings
from kbert.layers.transformer_block import BertTransformerBlock


@keras.saving.register_keras_serializable(package="kbert")
class BertEncoder(keras.Model):
    """BERT (Devlin et al. 2018): a bidirectional transformer encoder over WordPiece tokens.

    token_ids, segment_ids -> BertEmbeddings (token + position + segment, LayerNorm, dropout)
      -> num_hidden_layers x transformer block, post-LN:
           x = LayerNorm(x + Dropout(SelfAttention(x)))
           x = LayerNorm(x + Dropout(Dense_H(GELU(Dense_4H(x)))))
      -> sequence_output (batch, seq, hidden)
      -> pooled_output = tanh(Dense(sequence_output[:, 0]))   # the [CLS] vector, for sentence tasks

    At inference (outside XLA) the blocks run on the real tokens alone: packed into one (tokens, hidden) matrix
    after the embeddings and unpacked at the end, zeros at padded positions of `sequence_output`
    (`kbert.layers.token_packing`); training and XLA run the padded batch.

    The transformer block is keras-hub's `TransformerEncoder` with `normalize_first=False` (post-LN),
    which is exactly BERT's block, as `BertTransformerBlock` (`kbert/layers/transformer_block.py`): the
    same weights, with a faster training step. Constructor arguments are Google's `bert_config.json`
    field names. ALBERT's, RoBERTa's and DistilBERT's encoders (`AlbertEncoder`, `RobertaEncoder`,
    `DistilBertEncoder`) are subclasses that change the embeddings and the order of the blocks (the hooks
    `_make_layers`, `_make_embeddings`, `_embed`, `layer_blocks`); tasks, training and export see one interface.

    Args:
        vocab_size: int. Number of WordPiece tokens.
        hidden_size: int. Width H.
        num_hidden_layers: int. Number of transformer blocks L.
        num_attention_heads: int. Attention heads A.
        intermediate_size: int. Feed-forward width (4H in BERT).
        hidden_act: str. "gelu" (exact, as BERT); "gelu_new", "gelu_pytorch_tanh", "gelu_fast" or
            "gelu_approximate" (the tanh approximation); "relu" or "tanh".
        hidden_dropout_prob: float. Dropout on embeddings and sublayer outputs.
        attention_probs_dropout_prob: float. Dropout on attention probabilities. keras-hub's block has
            one dropout rate for both, so this must equal `hidden_dropout_prob` (it does in every
            released BERT); a different value is replaced by `hidden_dropout_prob` with a warning.
        max_position_embeddings: int. Longest input.
        type_vocab_size: int. Number of segments.
        initializer_range: float. Truncated-normal standard deviation.
        layer_norm_eps: float. LayerNorm epsilon.
        dtype: a Keras dtype policy name, e.g. `kbert.precision.keras_policy("bfloat16")`.

    Call arguments:
        inputs: dict of int tensors (batch, seq): `token_ids`, `segment_ids`, `padding_mask` (1 for real
            tokens, 0 for padding).

    Returns:
        dict with `sequence_output` (batch, seq, hidden) and `pooled_output` (batch, hidden).

    Example:
    >>> encoder = BertEncoder.from_preset("tiny", vocab_size=100)
    >>> ids = keras.ops.ones((2, 8), "int32")
    >>> out = encoder({"token_ids": ids, "segment_ids": 0 * ids, "padding_mask": ids})
    >>> out["sequence_output"].shape, out["pooled_output"].shape
    (TensorShape([2, 8, 128]), TensorShape([2, 128]))
    """

    # The family's config class; ALBERT's and RoBERTa's encoders subclass this one and change the hooks below.
    config_class = BertConfig

    def __init__(
        self,
        vocab_size: int = 30522,
        hidden_size: int = 768,
        num_hidden_layers: int = 12,
        num_attention_heads: int = 12,
        intermediate_size: int = 3072,
        hidden_act: str = "gelu",
        hidden_dropout_prob: float = 0.1,
        attention_probs_dropout_prob: float = 0.1,
        max_position_embeddings: int = 512,
        type_vocab_size: int = 2,
        initializer_range: float = 0.02,
        layer_norm_eps: float = 1e-12,
        dtype=None,
        **kwargs,
    ):
        config = BertConfig(
            vocab_size=vocab_size, hidden_size=hidden_size, num_hidden_layers=num_hidden_layers,
            num_attention_heads=num_attention_heads, intermediate_size=intermediate_size,
            hidden_act=hidden_act, hidden_dropout_prob=hidden_dropout_prob,
            attention_probs_dropout_prob=attention_probs_dropout_prob,
            max_position_embeddings=max_position_embeddings, type_vocab_size=type_vocab_size,
            initializer_range=initializer_range, layer_norm_eps=layer_norm_eps,
        )
        self._build_encoder(config, dtype, **kwargs)

    def _build_encoder(self, config: BertConfig, dtype, **kwargs) -> None:
        """Makes the layers (`_make_layers`) and the functional model of the encoder that `config` describes."""
        if config.attention_probs_dropout_prob != config.hidden_dropout_prob:
            warnings.warn(
                f"attention_probs_dropout_prob={config.attention_probs_dropout_prob} differs from "
                f"hidden_dropout_prob={config.hidden_dropout_prob}; both use {config.hidden_dropout_prob}."
            )
        self.bert_config = config
        # === Layers ===
        self._make_layers(config, dtype)
        self.pooler = keras.layers.Dense(config.hidden_size, activation="tanh",
                                         kernel_initializer=self._initializer(config), dtype=dtype, name="pooler")

        # === Functional model ===
        inputs = {name: keras.Input(shape=(None,), dtype="int32", name=name)
                  for name in ("token_ids", "segment_ids", "padding_mask")}
        super().__init__(inputs=inputs, outputs=self._forward(inputs), dtype=dtype, **kwargs)

    def _forward(self, inputs: dict, training=None, unpadded: bool = False) -> dict:
        """The encoder's function: the functional graph's (padded), and `call`'s at inference (`unpadded`:
        the blocks run on the real tokens alone, packed once after the embeddings and unpacked once at the end,
        with zeros at padded positions of `sequence_output`)."""
        padding_mask = inputs["padding_mask"]
        x = self._embed(inputs["token_ids"], inputs["segment_ids"], training=training)  # (batch, seq, hidden)
        if unpadded:
            positions = token_packing.token_positions(padding_mask)
            x = token_packing.pack(x, positions)  # (tokens, hidden)
        for blocks in self.layer_blocks():
            for block in blocks:
                x = block(x, padding_mask=padding_mask, training=training,
                          **({"positions": positions} if unpadded else {}))
        if unpadded:
            x = tf.reshape(token_packing.unpack(x, positions, padding_mask),
                           tf.concat([tf.shape(padding_mask), [x.shape[-1]]], 0))
        return {"sequence_output": x, "pooled_output": self.pooler(x[:, 0, :])}

    def call(self, inputs, training=None, mask=None):
        """The functional graph in training and under XLA; at inference, the same function on real tokens
        only (`kbert.layers.token_packing.unpads` decides)."""
        if not token_packing.unpads(training):
            return super().call(inputs, training=training, mask=mask)
        inputs = {name: tf.cast(inputs[name], tf.int32) for name in ("token_ids", "segment_ids", "padding_mask")}
        return self._forward(inputs, training=False, unpadded=True)

    def _make_layers(self, config: BertConfig, dtype) -> None:
        """BERT's layers before the pooler: `embeddings`, then `transformer_layers`, one block per hidden layer."""
        self.embeddings = self._make_embeddings(config, dtype)
        self.transformer_layers = [
            self._make_block(config, dtype, name=f"transformer_layer_{i}") for i in range(config.num_hidden_layers)
        ]

    def _make_embeddings(self, config: BertConfig, dtype, **options) -> BertEmbeddings:
        """The `embeddings` layer; `options` replace its arguments (ALBERT's width, RoBERTa's padding id)."""
        arguments = dict(
            vocab_size=config.vocab_size, hidden_size=config.hidden_size,
            max_position_embeddings=config.max_position_embeddings, type_vocab_size=config.type_vocab_size,
            layer_norm_eps=config.layer_norm_eps, dropout=config.hidden_dropout_prob,
            initializer_range=config.initializer_range,
        )
        return BertEmbeddings(**{**arguments, **options}, dtype=dtype, name="embeddings")

    @staticmethod
    def _initializer(config: BertConfig) -> keras.initializers.Initializer:
        """The encoder's initializer: a normal of std `initializer_range`, cut at 2 std (as Google's BERT)."""
        return keras.initializers.TruncatedNormal(stddev=config.initializer_range)

    def _make_block(self, config: BertConfig, dtype, name: str) -> BertTransformerBlock:
        return BertTransformerBlock(
            intermediate_dim=config.intermediate_size, num_heads=config.num_attention_heads,
            dropout=config.hidden_dropout_prob, activation=hidden_activation(config.hidden_act),
            layer_norm_epsilon=config.layer_norm_eps, kernel_initializer=self._initializer(config),
            normalize_first=False, dtype=dtype, name=name,
        )

    def _embed(self, token_ids, segment_ids, training=None):
        """The input of the first block (batch, seq, hidden)."""
        return self.embeddings(token_ids, segment_ids, training=training)

    def layer_blocks(self) -> list[list[BertTransformerBlock]]:
        """The blocks each hidden layer runs, in order: BERT's layer i runs `transformer_layers[i]`."""
        return [[block] for block in self.transformer_layers]

    @classmethod
    def from_preset(cls, name: str, **overrides: Any) -> "BertEncoder":
        """A randomly initialised encoder of a named size of its family (`config_class.presets`; BERT's are
        tiny, mini, small, medium, base, large); `overrides` are config fields or `dtype`."""
        dtype = overrides.pop("dtype", None)
        return cls(**cls.config_class.from_preset(name, **overrides).to_dict(), dtype=dtype)

    @classmethod
    def from_config(cls, config):
        return cls(**config)

    def get_config(self) -> dict[str, Any]:
        return {
            **self.bert_config.to_dict(),
            "name": self.name,
            "trainable": self.trainable,
            # The layers' policy: a functional model's own stays float32 whatever `dtype` it was given.
            "dtype": keras.dtype_policies.serialize(self.embeddings.dtype_policy),
        }

    def probe(self, inputs: dict, training: bool = False) -> dict:
        """Runs the encoder and also returns what happens inside, for probing and visualisation.

        Returns:
            dict with `sequence_output`, `pooled_output`, `hidden_states` (a list of num_hidden_layers + 1
            tensors (batch, seq, hidden): the first block's input, then each hidden layer's output) and
            `attention_probs` (a list of tensors (batch, heads, query, key), one per block run: num_hidden_layers,
            times inner_group_num in ALBERT).
        """
        padding_mask = keras.ops.cast(inputs["padding_mask"], "int32")
        x = self._embed(inputs["token_ids"], inputs["segment_ids"], training=training)
        hidden_states, attention_probs = [x], []
        for blocks in self.layer_blocks():
            for block in blocks:
                x, probs = block(x, padding_mask=padding_mask, training=training, return_attention_scores=True)
                attention_probs.append(probs)
            hidden_states.append(x)
        return {
            "sequence_output": x,
            "pooled_output": self.pooler(x[:, 0, :]),
            "hidden_states": hidden_states,
            "attention_probs": attention_probs,
        }
