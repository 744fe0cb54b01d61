"""Extractive question answering: start and end scores for every context token (SQuAD)."""

from __future__ import annotations

import keras

from kbert.models.bert_encoder import BertEncoder
from kbert.models.bert_task_model import BertTaskModel

# Added to the logits of positions that cannot hold an answer (padding); finite, so float16 stays safe
# once cast, and far below any real logit.
NOT_AN_ANSWER = -1e4
OUTPUTS = ("start_logits", "end_logits")


@keras.saving.register_keras_serializable(package="kbert")
class BertQuestionAnswerer(BertTaskModel):
    """BERT's downstream case 4: `[CLS] question [SEP] context [SEP]`, two learned vectors S and E.

    The score of token i as the answer's start is S·T_i, as its end E·T_i (a 2-unit dense layer on the
    sequence output); a span's score is start + end. Padding positions get -1e4. `[CLS]` (position 0)
    stands for "no answer" (SQuAD 2.0, and windows of a long context that miss the answer).

    Args:
        encoder: a `kbert.BertEncoder`.
        dropout: float. Dropout before the head.
        feature_based: bool. Freeze the encoder, train the head only.

    Returns:
        dict of float32 `start_logits` and `end_logits`, each (batch, seq).

    Training labels: a dict of `start_logits` and `end_logits`, each the int position (batch,) of the
    answer's first and last token; the loss is their mean cross-entropy.

    Example:
    >>> encoder = BertEncoder(vocab_size=30, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
    ...                       intermediate_size=32)
    >>> sorted(BertQuestionAnswerer(encoder).output.keys())
    ['end_logits', 'start_logits']
    """

    def __init__(self, encoder: BertEncoder, dropout: float = 0.1, feature_based: bool = False, **kwargs):
        self._build_head_layers(encoder, 2, dropout, name="span_logits")

        def head(inputs, encoded):
            logits = self.output_dense(self.output_dropout(encoded["sequence_output"]))  # (batch, seq, 2)
            padding = 1.0 - keras.ops.cast(inputs["padding_mask"], "float32")
            logits = logits + keras.ops.expand_dims(padding * NOT_AN_ANSWER, -1)
            start, end = keras.ops.unstack(logits, 2, axis=-1)
            return {"start_logits": start, "end_logits": end}

        self._build_task_model(encoder, dropout, feature_based, head, **kwargs)

    def default_loss(self) -> dict[str, keras.losses.Loss]:
        """Cross-entropy of the start and of the end position (averaged: `default_loss_weights`)."""
        return {name: keras.losses.SparseCategoricalCrossentropy(from_logits=True) for name in OUTPUTS}

    def default_loss_weights(self) -> dict[str, float]:
        return {name: 0.5 for name in OUTPUTS}

    def default_metrics(self) -> dict[str, list[keras.metrics.Metric]]:
        """Exact-position accuracy of the start and of the end."""
        return {name: [keras.metrics.SparseCategoricalAccuracy(name="accuracy")] for name in OUTPUTS}
