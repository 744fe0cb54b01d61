"""What every fine-tuning model shares: an encoder, a fresh head, and `compile()` defaults that work."""

from __future__ import annotations

from typing import Any

import keras

from kbert.models.bert_encoder import BertEncoder
from kbert.models.encoder_config import EncoderConfigMixin
from kbert.optim.defaults import build_optimizer_slots, create_optimizer


class BertTaskModel(EncoderConfigMixin, keras.Model):
    """Base of the fine-tuning models: an encoder, a head on it, and one `compile()` with defaults.

    A subclass builds its head and calls `_build_task_model(encoder, dropout, feature_based, head_fn)`; it
    declares its training defaults once, in `default_loss()` and `default_metrics()` (and
    `default_loss_weights()` for several outputs), which `compile()` fills in for "auto".

    Args (shared by every model on this base):
        encoder: a `kbert.BertEncoder`, usually from `kbert.load_pretrained`.
        dropout: float. Dropout before the head (0.1, as in BERT's fine-tuning).
        feature_based: bool. Freeze the encoder and train only the head on its features (the ELMo-style
            alternative the BERT paper compares with fine-tuning).

    Example:
    >>> class MeanScore(BertTaskModel):
    ...     def __init__(self, encoder, dropout=0.1, feature_based=False, **kwargs):
    ...         self._build_head_layers(encoder, 1, dropout, name="score")
    ...         self._build_task_model(encoder, dropout, feature_based,
    ...                                lambda inputs, encoded: self.output_dense(encoded["pooled_output"]), **kwargs)
    ...     def default_loss(self):
    ...         return keras.losses.MeanSquaredError()
    >>> encoder = BertEncoder(vocab_size=30, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
    ...                       intermediate_size=32)
    >>> model = MeanScore(encoder)
    >>> model.compile()   # AdamW 5e-5, mean squared error, no metrics
    >>> type(model.loss).__name__
    'MeanSquaredError'
    """

    # Fine-tuning defaults from BERT's appendix A.3 (lr in {5e-5, 3e-5, 2e-5}); a head-only model learns
    # faster, so feature-based training uses a larger rate.
    default_learning_rate = 5e-5

    def _build_task_model(self, encoder: BertEncoder, dropout: float, feature_based: bool, head_fn, **kwargs):
        """Runs `head_fn(inputs, encoder_outputs)` on the encoder and builds the functional model."""
        self.encoder = encoder
        self.dropout = dropout
        self.feature_based = feature_based
        if feature_based:
            encoder.trainable = False
        inputs = dict(encoder.input)
        # A frozen encoder also runs in inference mode (no dropout) when it only supplies features.
        encoded = encoder(inputs, training=False) if feature_based else encoder(inputs)
        outputs = head_fn(inputs, encoded)
        super().__init__(inputs=inputs, outputs=outputs, **kwargs)

    def head_model(self) -> keras.Model:
        """The model past its encoder: a functional model of this model's layers after the encoder, for running
        the head on encoder outputs computed another way (`BertEncoder.probe`, which also returns what happens
        inside).

        Returns:
            A `keras.Model` that shares this model's weights. Call it on a list: `token_ids`, `segment_ids`,
            `padding_mask` (batch, seq), then `sequence_output` (batch, seq, hidden) and `pooled_output`
            (batch, hidden); it returns what this model returns.
        """
        # The encoder is called once in this model's graph: its one node holds the tensors the head reads.
        encoded = keras.tree.pack_sequence_as(self.encoder.output, self.encoder._inbound_nodes[0].outputs)
        return keras.Model([self.input[name] for name in ("token_ids", "segment_ids", "padding_mask")]
                           + [encoded["sequence_output"], encoded["pooled_output"]], self.output,
                           name=f"{self.name}_head")

    # -- training defaults, declared once per head ---------------------------------------------------------
    def default_optimizer(self) -> keras.optimizers.Optimizer:
        """`kbert.optim.create_optimizer`'s AdamW at a constant rate: PyTorch's update rule, weight decay
        0.01 except on LayerNorm and biases, epsilon 1e-6, gradients clipped at global norm 1."""
        return create_optimizer(1e-3 if self.feature_based else self.default_learning_rate)

    def default_loss(self) -> Any:
        """The loss `compile(loss="auto")` uses: a Keras loss, or a dict of them by output name."""
        raise NotImplementedError(f"{type(self).__name__} declares no default loss: pass compile(loss=...)")

    def default_metrics(self) -> Any:
        """The metrics `compile(metrics="auto")` uses: a list, or a dict of lists by output name."""
        return []

    def default_loss_weights(self) -> Any:
        """The loss weights of several outputs that go with `default_loss()`; None: Keras' default."""
        return None

    def compile(self, optimizer="auto", loss="auto", metrics="auto", **kwargs):
        """Keras `compile` with the model's defaults for "auto", then the optimizer's variables made at once
        (`build_optimizer_slots`), so the first `fit` traces its step once.

        Args:
            optimizer: a Keras optimizer, or "auto": `default_optimizer()`.
            loss: a Keras loss (or dict of them), or "auto": `default_loss()`, weighted by
                `default_loss_weights()` unless `loss_weights` is given.
            metrics: Keras metrics, or "auto": `default_metrics()`.
            **kwargs: the rest of `keras.Model.compile`'s arguments.
        """
        if _is_auto(optimizer):
            optimizer = self.default_optimizer()
        if _is_auto(loss):
            loss = self.default_loss()
            weights = self.default_loss_weights()
            if weights is not None:
                kwargs.setdefault("loss_weights", weights)
        if _is_auto(metrics):
            metrics = self.default_metrics()
        super().compile(optimizer=optimizer, loss=loss, metrics=metrics, **kwargs)
        build_optimizer_slots(self)

    # -- config --------------------------------------------------------------------------------------------
    def head_config(self) -> dict[str, Any]:
        """The head's own constructor arguments (e.g. `num_classes`), for `get_config`."""
        return {}

    def encoder_model_config(self) -> dict[str, Any]:
        return {"dropout": self.dropout, "feature_based": self.feature_based, **self.head_config()}

    def get_compile_config(self):
        return None  # compile() defaults are rebuilt by calling compile() after loading

    def _build_head_layers(self, encoder: BertEncoder, units: int, dropout: float, name: str) -> None:
        """The head every model on this base shares: dropout, then a dense layer with float32 outputs (logits
        stay float32 under mixed precision).

        The kernel is drawn from a normal of std `initializer_range`, as Hugging Face draws a new head; Google's
        code cuts that normal at 2 std (std 0.88x, no tails), and on a fine-tuning benchmark of 5,000
        sentences the cut head scored about 2 F1 points lower on both kbert and PyTorch
        (docs/investigations/framework-or-seed.md).
        """
        self.output_dropout = keras.layers.Dropout(dropout, name="output_dropout")
        self.output_dense = keras.layers.Dense(
            units,
            kernel_initializer=keras.initializers.RandomNormal(stddev=encoder.bert_config.initializer_range),
            dtype="float32",
            name=name,
        )


def _is_auto(value: Any) -> bool:
    return isinstance(value, str) and value == "auto"
