"""The intermediate-layer losses of a distillation: which teacher layer each student layer matches, the
hidden-state loss of TinyBERT (Jiao et al. 2019) and the attention loss of MiniLM (Wang et al. 2020).

Both read what `BertEncoder.probe` returns: `hidden_states` (the first block's input, then each layer's output)
and `attention_probs` (one (batch, heads, query, key) tensor per block run). Both count real tokens only.
"""

from __future__ import annotations

from typing import Sequence

import keras
import tensorflow as tf

from kbert.models.bert_encoder import BertEncoder


def uniform_layer_map(teacher_layers: int, student_layers: int) -> list[int]:
    """TinyBERT's map: student layer m (of K) matches teacher layer (m + 1) * L // K - 1, the last the last.

    Example:
    >>> uniform_layer_map(12, 4), uniform_layer_map(4, 4), uniform_layer_map(6, 3)
    ([2, 5, 8, 11], [0, 1, 2, 3], [1, 3, 5])
    """
    return [(m + 1) * teacher_layers // student_layers - 1 for m in range(student_layers)]


def check_layer_map(layer_map: Sequence[int], teacher_layers: int, student_layers: int) -> list[int]:
    """`layer_map` as a list, or ValueError when it does not give one teacher layer (0..L-1) per student layer."""
    layer_map = [int(layer) for layer in layer_map]
    if len(layer_map) != student_layers or not all(0 <= layer < teacher_layers for layer in layer_map):
        raise ValueError(f"the layer map {layer_map} must give each of the student's {student_layers} layers one of "
                         f"the teacher's {teacher_layers} layers (0 to {teacher_layers - 1})")
    return layer_map


def last_blocks(encoder: BertEncoder) -> list[int]:
    """The index in `probe`'s `attention_probs` of each hidden layer's last block (ALBERT runs several a layer)."""
    ends, count = [], 0
    for blocks in encoder.layer_blocks():
        count += len(blocks)
        ends.append(count - 1)
    return ends


def hidden_state_loss(teacher_states: Sequence[tf.Tensor], student_states: Sequence[tf.Tensor],
                      layer_map: Sequence[int], embedding_projection: keras.layers.Layer,
                      hidden_projection: keras.layers.Layer, padding_mask: tf.Tensor) -> tf.Tensor:
    """TinyBERT's hidden-state loss: the mean, over the embeddings and the K matched layers, of the mean squared
    error between the student's states projected to the teacher's width and the teacher's, over real tokens.

    Args:
        teacher_states: the teacher's `hidden_states` (L + 1 tensors (batch, seq, teacher width)).
        student_states: the student's `hidden_states` (K + 1 tensors (batch, seq, student width)).
        layer_map: the teacher layer each student layer matches (K ints).
        embedding_projection: student width -> teacher width, for the embeddings (the first block's input).
        hidden_projection: student width -> teacher width, for the layers' outputs.
        padding_mask: (batch, seq), 1 for real tokens.

    Returns:
        A float32 scalar.
    """
    mask = tf.cast(padding_mask, tf.float32)[:, :, None]  # (batch, seq, 1)
    count = tf.reduce_sum(mask) * float(teacher_states[0].shape[-1])
    pairs = [(embedding_projection, student_states[0], teacher_states[0])]
    pairs += [(hidden_projection, student_states[m + 1], teacher_states[g + 1]) for m, g in enumerate(layer_map)]
    errors = [tf.reduce_sum(tf.square(project(tf.cast(mine, tf.float32)) - tf.cast(theirs, tf.float32)) * mask)
              / count for project, mine, theirs in pairs]
    return tf.add_n(errors) / float(len(errors))


def attention_loss(teacher_probs: tf.Tensor, student_probs: tf.Tensor, padding_mask: tf.Tensor) -> tf.Tensor:
    """MiniLM's attention loss: KL(teacher || student) of each head's attention distribution over the real keys,
    averaged over heads and real query positions.

    Args:
        teacher_probs: (batch, heads, query, key) attention probabilities of the teacher's layer.
        student_probs: the same of the student's layer, with as many heads.
        padding_mask: (batch, seq), 1 for real tokens.

    Returns:
        A float32 scalar.
    """
    mask = tf.cast(padding_mask, tf.float32)
    teacher_probs, student_probs = tf.cast(teacher_probs, tf.float32), tf.cast(student_probs, tf.float32)
    # A real key's probability is never 0 but may round to it: the floor keeps its log finite.
    terms = teacher_probs * (tf.math.log(tf.maximum(teacher_probs, 1e-12))
                             - tf.math.log(tf.maximum(student_probs, 1e-12)))
    per_query = tf.reduce_sum(terms * mask[:, None, None, :], axis=-1)  # (batch, heads, query)
    heads = float(teacher_probs.shape[1])
    return tf.reduce_sum(per_query * mask[:, None, :]) / (tf.reduce_sum(mask) * heads)
