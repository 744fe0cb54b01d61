"""Sentence embeddings: the encoder's token vectors pooled into one vector, mapped by any Dense layers and
optionally made unit-length."""

from __future__ import annotations

from typing import Any, Sequence

import keras
import numpy as np

from kbert.layers.sentence_pooling import SentencePooling
from kbert.models.bert_encoder import BertEncoder
from kbert.models.bert_task_model import BertTaskModel
from kbert.tasks.embedding_loss import MultipleNegativesRankingLoss


@keras.saving.register_keras_serializable(package="kbert")
class BertSentenceEmbedder(BertTaskModel):
    """A sentence-transformers model in Keras: BERT, pooling, any Dense modules, and optionally L2 normalisation.

    sequence_output -> `SentencePooling(pooling)` -> `Dense` ... (one per entry of `dense`) ->
    `UnitNormalization` (if `normalize`) -> embedding

    No weights of its own beside the encoder's and the Dense layers': fine-tuning trains both (with
    `MultipleNegativesRankingLoss` over in-batch negatives, the default loss). Built from a
    sentence-transformers directory by `kbert.load_sentence_encoder`, or on any encoder by
    `kbert.tasks.EmbeddingTask.build_model`. Loaded so, it also has `task` (the `EmbeddingTask`, with the
    prompts), `tokenizer` and `preprocessor`, and `encode` embeds texts as sentence-transformers does.

    Args:
        encoder: a `kbert.BertEncoder`.
        pooling: str. One of `kbert.constants.POOLING_MODES`.
        normalize: bool. Divide each embedding by its L2 norm (as sentence-transformers' `Normalize`).
        dense: list of dict. `keras.layers.Dense` arguments (`units`, `use_bias`, `activation`) of the layers
            between the pooling and the normalisation, in order (sentence-transformers' `Dense` modules:
            `kbert.convert.sentence_dense.SentenceDense.layer_config`). Computed in float32.
        feature_based: bool. Freeze the encoder (inference only: the model then has nothing to train).

    Call arguments:
        inputs: dict of `token_ids`, `segment_ids`, `padding_mask` (batch, seq).

    Returns:
        Float32 embeddings (batch, hidden_size), or (batch, the last Dense layer's units).

    Example:
    >>> encoder = BertEncoder(vocab_size=30, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
    ...                       intermediate_size=32)
    >>> model = BertSentenceEmbedder(encoder, pooling="mean", normalize=True)
    >>> model.compile()   # AdamW 5e-5, MultipleNegativesRankingLoss (scale 20) over (anchor, positive) rows
    >>> model.output.shape
    (None, 16)
    """

    def __init__(self, encoder: BertEncoder, pooling: str = "mean", normalize: bool = True,
                 feature_based: bool = False, dense: Sequence[dict[str, Any]] = (), **kwargs):
        kwargs.pop("dropout", None)  # no head layers, so no head dropout (the encoder keeps its own)
        # The [CLS] pooler is no part of a sentence embedding (every mode reads the token vectors): frozen, it
        # is left as it is rather than decayed by AdamW without a gradient.
        encoder.pooler.trainable = False
        self.pooling = pooling
        self.normalize = bool(normalize)
        self.sentence_pooling = SentencePooling(pooling, name="pooling")
        self.dense = [dict(layer) for layer in dense]
        self.dense_layers = [keras.layers.Dense(**layer, dtype="float32", name=f"dense_{i}")
                             for i, layer in enumerate(self.dense)]
        # Keras' UnitNormalization divides by max(norm, 1e-12), as torch's F.normalize does.
        self.unit_normalization = keras.layers.UnitNormalization(dtype="float32", name="normalize") if normalize \
            else None

        def head(inputs, encoded):
            pooled = self.sentence_pooling(encoded["sequence_output"], inputs["padding_mask"])
            for layer in self.dense_layers:
                pooled = layer(pooled)
            return self.unit_normalization(pooled) if self.unit_normalization is not None else pooled

        self._build_task_model(encoder, 0.0, feature_based, head, **kwargs)

    def encoder_model_config(self):
        return {"feature_based": self.feature_based, "pooling": self.pooling, "normalize": self.normalize,
                "dense": self.dense}

    def encode(self, texts: Sequence[str], prompt_name: str | None = None, batch_size: int = 32) -> np.ndarray:
        """Embeds texts as `SentenceTransformer.encode(texts, prompt_name=...)` does: the prompt's text (the
        task's default prompt when `prompt_name` is None and it has one) is prepended to each text before
        tokenizing, so it counts toward the sequence length.

        Args:
            texts: the texts.
            prompt_name: str or None. A name of `self.task.prompts`.
            batch_size: int. Texts per model call.

        Returns:
            float32 array (len(texts), dimension).

        Raises:
            ValueError: the model has no preprocessor (it was built, not loaded by `kbert.load_sentence_encoder`
                or `kbert.load_model`), or no prompt of that name.
        """
        if getattr(self, "preprocessor", None) is None or getattr(self, "task", None) is None:
            raise ValueError("encode needs the model's task and preprocessor: load it with "
                             "kbert.load_sentence_encoder or kbert.load_model")
        prompt = self.task.prompt_text(prompt_name)
        texts = [prompt + text for text in texts]
        batches = [self.predict_on_batch(self.preprocessor(texts[i:i + batch_size]))
                   for i in range(0, len(texts), batch_size)]
        width = self.output.shape[-1]
        return np.concatenate(batches).astype(np.float32) if batches else np.zeros((0, width), np.float32)

    def default_loss(self) -> keras.losses.Loss:
        """In-batch negatives over (anchor, positive) rows, scale 20 (`kbert.tasks.EmbeddingTask.loss` sets the
        task's scale, symmetry and hard negatives)."""
        return MultipleNegativesRankingLoss()
