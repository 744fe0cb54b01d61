"""A bare encoder checkpoint exported as sentence embeddings (`kbert export CHECKPOINT`); not trainable."""

from __future__ import annotations

import dataclasses
from typing import Callable, ClassVar

import tensorflow as tf

from kbert.tasks.base import Task
from kbert.tasks.serving import ServingInputs, sentence_functions


@dataclasses.dataclass
class EncoderTask(Task):
    """The encoder alone: `pooled_output` and the mean of the token vectors (sentence embeddings)."""

    name: ClassVar[str] = "encoder"
    summary: ClassVar[str] = "text (pair) -> pooled output and mean embedding"

    def serving_functions(self, inputs: ServingInputs, pair: bool = False) -> dict[str, Callable]:
        """encoder(text[, text_pair]) -> pooled_output (batch, H), mean_embedding (batch, H)."""
        return sentence_functions(inputs, pair, lambda x, y: {
            "pooled_output": y["pooled_output"],
            "mean_embedding": masked_mean(y["sequence_output"], x["padding_mask"])})


def masked_mean(sequence_output: tf.Tensor, padding_mask: tf.Tensor) -> tf.Tensor:
    """Mean of the token vectors over real tokens (`[CLS]` and `[SEP]` included), `(batch, hidden)`."""
    mask = tf.expand_dims(tf.cast(padding_mask, sequence_output.dtype), 2)
    total = tf.reduce_sum(sequence_output * mask, axis=1)
    return total / tf.maximum(tf.reduce_sum(mask, axis=1), 1.0)
