"""`MultipleNegativesRankingLoss`: in-batch negatives for sentence embeddings, across replicas too."""

from __future__ import annotations

import keras
import tensorflow as tf


@keras.saving.register_keras_serializable(package="kbert")
class MultipleNegativesRankingLoss(keras.losses.Loss):
    """Each anchor must pick its own positive among every positive (and hard negative) of the batch.

    The scores are the cosine similarities of an anchor with every candidate, times `scale`; the loss is the
    cross-entropy with the anchor's own positive as the target (sentence-transformers'
    `MultipleNegativesRankingLoss`). `symmetric` adds the other direction, each positive picking its anchor
    among all anchors, and averages the two (its `MultipleNegativesSymmetricRankingLoss`).

    The predictions hold each example's texts in consecutive rows: anchor, positive, then its hard negatives
    (`group_size` rows an example, as `kbert.tasks.embedding_data.embedding_dataset` batches them). Under
    a `tf.distribute` strategy of several replicas the candidates (and, symmetric, the anchors) of every
    replica are gathered (`all_gather` in the replica context, whose gradient returns each replica its
    share), so each anchor meets the negatives of the global batch, as on one device; each replica
    averages the loss of its own anchors.

    Args:
        scale: float. Multiplies the cosine similarities (an inverse temperature; 20 in sentence-transformers).
        symmetric: bool. Also rank the anchors for each positive.
        group_size: int. Rows an example: 2 (anchor, positive) or more (hard negatives after them).
        **kwargs: `keras.losses.Loss`'s (e.g. `dtype`: the precision it computes in, float32 by default).

    Call arguments:
        y_true: ignored (the dataset's labels are each row's role: 0 anchor, 1 positive, 2 negative ...).
        y_pred: `(batch * group_size, dim)` embeddings.

    Returns:
        The mean loss over the (replica's) anchors.

    Example:
    >>> import numpy as np
    >>> rows = np.array([[1.0, 0.0], [0.9, 0.1], [0.0, 1.0], [0.1, 0.9]])  # two (anchor, positive) pairs
    >>> loss = MultipleNegativesRankingLoss(scale=20.0)
    >>> round(float(loss(np.zeros(4), rows)), 4)
    0.0
    """

    def __init__(self, scale: float = 20.0, symmetric: bool = False, group_size: int = 2,
                 name: str = "multiple_negatives_ranking", **kwargs):
        if group_size < 2:
            raise ValueError(f"group_size must be at least 2 (an anchor and its positive), got {group_size}")
        super().__init__(name=name, **kwargs)
        self.scale = float(scale)
        self.symmetric = bool(symmetric)
        self.group_size = int(group_size)

    def call(self, y_true, y_pred):
        rows = tf.convert_to_tensor(y_pred)
        rows = tf.math.l2_normalize(tf.cast(rows, self.dtype), axis=-1, epsilon=1e-24)  # float32 by default
        tf.debugging.assert_equal(tf.shape(rows)[0] % self.group_size, 0, message=(
            f"embedding rows are not whole groups of {self.group_size} (anchor, positive, negatives): under "
            f"several replicas the global batch must divide evenly among them"))
        groups = tf.reshape(rows, [-1, self.group_size, tf.shape(rows)[-1]])
        anchors, positives = groups[:, 0], groups[:, 1]
        # Candidates in sentence-transformers' order: all positives, then each column of hard negatives.
        columns = tf.unstack(tf.transpose(groups[:, 1:], [1, 0, 2]), num=self.group_size - 1)
        gathered = [_all_replicas(column) for column in columns]
        local = tf.shape(anchors)[0]
        targets = _replica_offset(local) + tf.range(local)
        logits = self.scale * tf.matmul(anchors, tf.concat(gathered, 0), transpose_b=True)
        loss = tf.nn.sparse_softmax_cross_entropy_with_logits(targets, logits)
        if self.symmetric:
            back = self.scale * tf.matmul(positives, _all_replicas(anchors), transpose_b=True)
            loss = (loss + tf.nn.sparse_softmax_cross_entropy_with_logits(targets, back)) / 2
        return loss

    def get_config(self) -> dict:
        return {**super().get_config(), "scale": self.scale, "symmetric": self.symmetric,
                "group_size": self.group_size}


def _all_replicas(value: tf.Tensor) -> tf.Tensor:
    """`value` of every replica, concatenated in replica order (the value itself on one replica)."""
    context = tf.distribute.get_replica_context()
    if context is None or context.num_replicas_in_sync == 1:
        return value
    return context.all_gather(value, axis=0)


def _replica_offset(local: tf.Tensor) -> tf.Tensor:
    """Where this replica's rows start in the gathered batch (replicas hold `local` rows each)."""
    context = tf.distribute.get_replica_context()
    if context is None or context.num_replicas_in_sync == 1:
        return tf.zeros([], tf.int32)
    return tf.cast(context.replica_id_in_sync_group, tf.int32) * local
