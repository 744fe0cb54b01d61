"""Token tagging (NER, POS): one label per word, predicted on the word's first WordPiece."""

from __future__ import annotations

import keras

from kbert.constants import IGNORE_LABEL
from kbert.metrics.keras_metrics import MaskedAccuracy
from kbert.models.bert_encoder import BertEncoder
from kbert.models.bert_task_model import BertTaskModel


@keras.saving.register_keras_serializable(package="kbert")
class BertTokenClassifier(BertTaskModel):
    """BERT's downstream case 2: a label for every token (the paper tags each word's first piece).

    sequence_output -> dropout -> dense(num_labels) -> logits at every position

    Labels are given per position, with -100 on the positions that are not scored: `[CLS]`, `[SEP]`,
    padding and every continuation piece (`##...`) of a word. The loss and the accuracy skip them.
    `kbert.tasks.tagging_data` aligns word labels to pieces this way.

    Args:
        encoder: a `kbert.BertEncoder`.
        num_labels: int. Number of tags.
        dropout: float. Dropout before the head.
        feature_based: bool. Freeze the encoder, train the head only.

    Returns:
        Float32 logits (batch, seq, num_labels).

    Example:
    >>> encoder = BertEncoder(vocab_size=30, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
    ...                       intermediate_size=32)
    >>> BertTokenClassifier(encoder, num_labels=9).output.shape
    (None, None, 9)
    """

    def __init__(self, encoder: BertEncoder, num_labels: int, dropout: float = 0.1,
                 feature_based: bool = False, **kwargs):
        if num_labels < 2:
            raise ValueError(f"num_labels must be >= 2, got {num_labels}")
        self.num_labels = num_labels
        self._build_head_layers(encoder, num_labels, dropout, name="logits")

        def head(inputs, encoded):
            return self.output_dense(self.output_dropout(encoded["sequence_output"]))

        self._build_task_model(encoder, dropout, feature_based, head, **kwargs)

    def head_config(self):
        return {"num_labels": self.num_labels}

    def default_loss(self) -> keras.losses.Loss:
        """Cross-entropy over the scored positions only."""
        return keras.losses.SparseCategoricalCrossentropy(from_logits=True, ignore_class=IGNORE_LABEL)

    def default_metrics(self) -> list[keras.metrics.Metric]:
        """Accuracy over the scored positions."""
        return [MaskedAccuracy(ignore_index=IGNORE_LABEL, name="accuracy")]
