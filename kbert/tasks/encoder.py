"""A bare encoder checkpoint exported as sentence embeddings (`kbert export CHECKPOINT`); not trainable."""

from __future__ import annotations

import dataclasses
from typing import Callable, ClassVar

import keras
import tensorflow as tf

from kbert.constants import POOLING_MODES
from kbert.layers.sentence_pooling import SentencePooling
from kbert.tasks.base import Task
from kbert.tasks.serving import ServingInputs, sentence_functions


@dataclasses.dataclass
class EncoderTask(Task):
    """The encoder alone: `pooled_output`, the mean of the token vectors, and a sentence embedding.

    Args:
        pooling: str. How `embedding` pools the token vectors: one of `kbert.constants.POOLING_MODES`.
        normalize: bool. `embedding` has unit L2 norm.

    Example:
    >>> EncoderTask().pooling, EncoderTask().normalize
    ('mean', True)
    """

    name: ClassVar[str] = "encoder"
    summary: ClassVar[str] = "text (pair) -> pooled output, mean embedding and sentence embedding"

    pooling: str = "mean"
    normalize: bool = True

    def __post_init__(self):
        if self.pooling not in POOLING_MODES:
            raise ValueError(f"pooling {self.pooling!r} is not one of {POOLING_MODES}")

    def serving_functions(self, inputs: ServingInputs, pair: bool = False) -> dict[str, Callable]:
        """encoder(text[, text_pair]) -> pooled_output (batch, H), mean_embedding (batch, H) and embedding
        (batch, H): the token vectors pooled with `pooling` (and L2-normalised with `normalize`), as
        sentence-transformers computes a sentence embedding."""
        mean = SentencePooling("mean")

        def head(x: dict[str, tf.Tensor], y: dict[str, tf.Tensor]) -> dict[str, tf.Tensor]:
            return {"pooled_output": y["pooled_output"],
                    "mean_embedding": mean(y["sequence_output"], x["padding_mask"]),
                    **self.mediapipe_output(x, y)}

        return sentence_functions(inputs, pair, head)

    mediapipe_task: ClassVar[str | None] = "TextEmbedder"

    def mediapipe_output(self, inputs: dict[str, tf.Tensor], outputs: dict[str, tf.Tensor]) -> dict[str, tf.Tensor]:
        """`embedding` (batch, H): the token vectors pooled with `pooling`, L2-normalised with `normalize`."""
        embedding = SentencePooling(self.pooling)(outputs["sequence_output"], inputs["padding_mask"])
        if self.normalize:  # stateless layers: built per call
            embedding = keras.layers.UnitNormalization(dtype="float32")(embedding)
        return {"embedding": embedding}
