"""Sentence embeddings: the encoder's token vectors pooled into one (optionally unit-length) vector."""

from __future__ import annotations

import keras

from kbert.layers.sentence_pooling import SentencePooling
from kbert.models.bert_encoder import BertEncoder
from kbert.models.bert_task_model import BertTaskModel
from kbert.tasks.embedding_loss import MultipleNegativesRankingLoss


@keras.saving.register_keras_serializable(package="kbert")
class BertSentenceEmbedder(BertTaskModel):
    """A sentence-transformers model in Keras: BERT, pooling, and optionally L2 normalisation.

    sequence_output -> `SentencePooling(pooling)` -> `UnitNormalization` (if `normalize`) -> embedding

    No weights of its own beside the encoder's: fine-tuning trains the encoder (with
    `MultipleNegativesRankingLoss` over in-batch negatives, the default loss). Built from a
    sentence-transformers directory by `kbert.load_sentence_encoder`, or on any encoder by
    `kbert.tasks.EmbeddingTask.build_model`.

    Args:
        encoder: a `kbert.BertEncoder`.
        pooling: str. One of `kbert.constants.POOLING_MODES`.
        normalize: bool. Divide each embedding by its L2 norm (as sentence-transformers' `Normalize`).
        feature_based: bool. Freeze the encoder (inference only: the model then has nothing to train).

    Call arguments:
        inputs: dict of `token_ids`, `segment_ids`, `padding_mask` (batch, seq).

    Returns:
        Float32 embeddings (batch, hidden_size).

    Example:
    >>> encoder = BertEncoder(vocab_size=30, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
    ...                       intermediate_size=32)
    >>> model = BertSentenceEmbedder(encoder, pooling="mean", normalize=True)
    >>> model.compile()   # AdamW 5e-5, MultipleNegativesRankingLoss (scale 20) over (anchor, positive) rows
    >>> model.output.shape
    (None, 16)
    """

    def __init__(self, encoder: BertEncoder, pooling: str = "mean", normalize: bool = True,
                 feature_based: bool = False, **kwargs):
        kwargs.pop("dropout", None)  # no head layers, so no head dropout (the encoder keeps its own)
        # The [CLS] pooler is no part of a sentence embedding (every mode reads the token vectors): frozen, it
        # is left as it is rather than decayed by AdamW without a gradient.
        encoder.pooler.trainable = False
        self.pooling = pooling
        self.normalize = bool(normalize)
        self.sentence_pooling = SentencePooling(pooling, name="pooling")
        # Keras' UnitNormalization divides by max(norm, 1e-12), as torch's F.normalize does.
        self.unit_normalization = keras.layers.UnitNormalization(dtype="float32", name="normalize") if normalize \
            else None

        def head(inputs, encoded):
            pooled = self.sentence_pooling(encoded["sequence_output"], inputs["padding_mask"])
            return self.unit_normalization(pooled) if self.unit_normalization is not None else pooled

        self._build_task_model(encoder, 0.0, feature_based, head, **kwargs)

    def encoder_model_config(self):
        return {"feature_based": self.feature_based, "pooling": self.pooling, "normalize": self.normalize}

    def default_loss(self) -> keras.losses.Loss:
        """In-batch negatives over (anchor, positive) rows, scale 20 (`kbert.tasks.EmbeddingTask.loss` sets the
        task's scale, symmetry and hard negatives)."""
        return MultipleNegativesRankingLoss()
