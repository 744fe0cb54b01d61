"""Sentence (or sentence-pair) classification and regression on the pooled [CLS] vector."""

from __future__ import annotations

import keras

from kbert.models.bert_encoder import BertEncoder
from kbert.models.bert_task_model import BertTaskModel


@keras.saving.register_keras_serializable(package="kbert")
class BertClassifier(BertTaskModel):
    """BERT's downstream cases 1 and 3: one text, or a text pair, to one class (or one score).

    pooled_output ([CLS]) -> dropout -> dense(num_classes) -> logits

    A pair is packed as `[CLS] A [SEP] B [SEP]` by `kbert.BertPreprocessor`; the model sees one
    sequence either way. `num_classes=1` makes it a regressor (e.g. STS-B) trained with mean squared error.

    Args:
        encoder: a `kbert.BertEncoder`.
        num_classes: int. Number of classes; 1 for regression.
        dropout: float. Dropout before the head.
        feature_based: bool. Freeze the encoder, train the head only.

    Call arguments:
        inputs: dict of `token_ids`, `segment_ids`, `padding_mask` (batch, seq).

    Returns:
        Float32 logits (batch, num_classes); for regression, scores (batch, 1).

    Example:
    >>> encoder = BertEncoder(vocab_size=30, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
    ...                       intermediate_size=32)
    >>> model = BertClassifier(encoder, num_classes=3)
    >>> model.compile()   # AdamW 5e-5, sparse cross-entropy from logits, accuracy
    >>> model.output.shape
    (None, 3)
    """

    def __init__(self, encoder: BertEncoder, num_classes: int, dropout: float = 0.1,
                 feature_based: bool = False, **kwargs):
        if num_classes < 1:
            raise ValueError(f"num_classes must be >= 1, got {num_classes}")
        self.num_classes = num_classes
        self._build_head_layers(encoder, num_classes, dropout, name="logits")

        def head(inputs, encoded):
            return self.output_dense(self.output_dropout(encoded["pooled_output"]))

        self._build_task_model(encoder, dropout, feature_based, head, **kwargs)

    @property
    def is_regression(self) -> bool:
        return self.num_classes == 1

    def head_config(self):
        return {"num_classes": self.num_classes}

    def default_loss(self) -> keras.losses.Loss:
        """Cross-entropy from logits; mean squared error for regression."""
        if self.is_regression:
            return keras.losses.MeanSquaredError()
        return keras.losses.SparseCategoricalCrossentropy(from_logits=True)

    def default_metrics(self) -> list[keras.metrics.Metric]:
        """Accuracy; mean absolute error for regression."""
        if self.is_regression:
            return [keras.metrics.MeanAbsoluteError(name="mae")]
        return [keras.metrics.SparseCategoricalAccuracy(name="accuracy")]
