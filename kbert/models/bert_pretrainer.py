"""BERT pretraining: masked LM plus next-sentence (NSP) or sentence-order (SOP) prediction."""

from __future__ import annotations

import keras
import keras_hub
import numpy as np
import tensorflow as tf

from kbert.constants import OBJECTIVES
from kbert.layers.activations import hidden_activation
from kbert.models.bert_encoder import BertEncoder
from kbert.models.encoder_config import EncoderConfigMixin
from kbert.optim.defaults import build_optimizer_slots, create_optimizer

INPUT_NAMES = ("token_ids", "segment_ids", "padding_mask", "masked_positions")


@tf.function(jit_compile=True)
def masked_lm_loss_and_hits(masked_ids, logits, masked_weights):
    """Masked-LM loss and hits in one XLA cluster, even when the step around it is not compiled.

    The loss is the weighted mean cross-entropy over real predictions; `hits` (batch, max_predictions) is 1.0
    where the arg-max token is the target. The logits hold max_predictions x vocabulary floats per sequence,
    the step's largest element-wise tensor, and XLA fuses the loss's and the arg-max's passes over it
    (forward and backward). With the accuracy counted from these hits rather than by Keras'
    `SparseCategoricalAccuracy` on the logits, a mini `tf.function` step runs 8-11% faster; the fusion
    alone gives 0-2% of it (BENCHMARKS.md, "kbert's own transformer block"). Inside a step compiled with
    `jit_compile` it is simply part of that cluster.
    """
    masked_ids = tf.cast(masked_ids, tf.int32)
    masked_weights = tf.cast(masked_weights, tf.float32)
    per_token = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=masked_ids, logits=logits)
    loss = tf.reduce_sum(per_token * masked_weights) / tf.maximum(tf.reduce_sum(masked_weights), 1.0)
    hits = tf.cast(tf.equal(tf.argmax(logits, axis=-1, output_type=tf.int32), masked_ids), tf.float32)
    return loss, hits


@keras.saving.register_keras_serializable(package="kbert")
class BertPretrainer(EncoderConfigMixin, keras.Model):
    """The encoder with BERT's two pretraining heads, trained by `fit` on masked-LM features.

    - Masked LM: at each masked position, dense + GELU + LayerNorm, then a decoder tied to the token
      embedding plus an output bias (keras-hub's `MaskedLMHead`, which gathers the masked positions
      first, so the vocabulary projection runs on ~15% of the tokens, not all of them).
    - Sentence head (NSP: is B the sentence after A? SOP: are A and B in their original order?): a
      2-way dense layer on the pooled `[CLS]` output.

    Loss = mean MLM cross-entropy over real predictions (weighted by `masked_weights`) + sentence
    cross-entropy. Metrics: `mlm_accuracy`, `sentence_accuracy` (NSP or SOP).

    Args:
        encoder: a `kbert.BertEncoder`.
        objective: "nsp", "sop" or "none" (masked LM only).

    Call arguments:
        inputs: dict with `token_ids`, `segment_ids`, `padding_mask` (batch, seq) and `masked_positions`
            (batch, max_predictions).

    Returns:
        dict with `mlm_logits` (batch, max_predictions, vocab) and, unless objective is "none",
        `sentence_logits` (batch, 2); both float32.

    `fit` takes the feature dicts made by `kbert.pretraining_data` (static TFRecords or dynamic masking), which also
    hold the labels: `masked_ids`, `masked_weights` and `next_sentence_label`.

    Example:
    >>> encoder = BertEncoder(vocab_size=30, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
    ...                       intermediate_size=32)
    >>> pretrainer = BertPretrainer(encoder, objective="sop")
    >>> sorted(pretrainer.output.keys())
    ['mlm_logits', 'sentence_logits']
    """

    def __init__(self, encoder: BertEncoder, objective: str = "nsp", **kwargs):
        if objective not in OBJECTIVES:
            raise ValueError(f"objective must be one of {OBJECTIVES}, got {objective!r}")
        config = encoder.bert_config
        initializer = keras.initializers.TruncatedNormal(stddev=config.initializer_range)
        # === Layers ===
        self.encoder = encoder
        self.mlm_head = keras_hub.layers.MaskedLMHead(
            token_embedding=encoder.embeddings.token_embedding,
            intermediate_activation=hidden_activation(config.hidden_act),
            layer_norm_epsilon=config.layer_norm_eps,
            kernel_initializer=initializer,
            dtype=encoder.dtype_policy,
            name="mlm_head",
        )
        self.sentence_head = None
        if objective != "none":
            self.sentence_head = keras.layers.Dense(
                2, kernel_initializer=initializer, dtype=encoder.dtype_policy, name="sentence_head"
            )

        # === Functional model ===
        inputs = dict(encoder.input)
        inputs["masked_positions"] = keras.Input(shape=(None,), dtype="int32", name="masked_positions")
        encoded = encoder({k: inputs[k] for k in ("token_ids", "segment_ids", "padding_mask")})
        outputs = {
            "mlm_logits": keras.ops.cast(
                self.mlm_head(encoded["sequence_output"], mask_positions=inputs["masked_positions"]), "float32"
            )
        }
        if self.sentence_head is not None:
            outputs["sentence_logits"] = keras.ops.cast(self.sentence_head(encoded["pooled_output"]), "float32")
        super().__init__(inputs=inputs, outputs=outputs, **kwargs)
        self.objective = objective

        self.mlm_loss_tracker = keras.metrics.Mean(name="mlm_loss")
        # The share of real predictions whose arg-max is the target (hits come with the loss).
        self.mlm_accuracy = keras.metrics.Mean(name="mlm_accuracy")
        self.sentence_loss_tracker = keras.metrics.Mean(name="sentence_loss")
        self.sentence_accuracy = keras.metrics.SparseCategoricalAccuracy(name="sentence_accuracy")

    def call(self, inputs, training=None, mask=None):
        # The training features also carry the labels; the network reads only its own inputs.
        return super().call({k: inputs[k] for k in INPUT_NAMES}, training=training)

    def encoder_model_config(self):
        return {"objective": self.objective}

    def compile(self, optimizer="auto", **kwargs):
        """Compiles with `kbert.optim.create_optimizer(1e-4)` by default: AdamW, weight decay 0.01 except on
        LayerNorm and biases, gradients clipped at global norm 1.

        Losses come from the features themselves (see `compute_loss`), so no `loss=` is needed.
        """
        if optimizer == "auto":
            optimizer = create_optimizer(1e-4)
        super().compile(optimizer=optimizer, **kwargs)
        build_optimizer_slots(self)

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        # Labels travel in the feature dict `x`; `y`, if given, is ignored.
        mlm_weights = keras.ops.cast(x["masked_weights"], "float32")
        mlm_loss, mlm_hits = masked_lm_loss_and_hits(x["masked_ids"], y_pred["mlm_logits"], mlm_weights)
        self.mlm_loss_tracker.update_state(mlm_loss)
        self.mlm_accuracy.update_state(mlm_hits, sample_weight=mlm_weights)
        loss = mlm_loss
        if self.sentence_head is not None:
            labels = keras.ops.cast(x["next_sentence_label"], "int32")
            per_sequence = keras.losses.sparse_categorical_crossentropy(
                labels, y_pred["sentence_logits"], from_logits=True)
            # A mean that stays finite on an empty batch: a replica's share of a short last batch can be empty.
            count = keras.ops.maximum(keras.ops.cast(keras.ops.shape(per_sequence)[0], "float32"), 1.0)
            sentence_loss = keras.ops.sum(per_sequence) / count
            self.sentence_loss_tracker.update_state(sentence_loss)
            self.sentence_accuracy.update_state(labels, y_pred["sentence_logits"])
            loss = loss + sentence_loss
        return loss

    def compute_metrics(self, x, y, y_pred, sample_weight=None):
        return self.get_metrics_result()

    @property
    def metrics(self):
        metrics = [self._loss_tracker] if getattr(self, "_loss_tracker", None) is not None else []
        metrics += [self.mlm_loss_tracker, self.mlm_accuracy]
        if self.sentence_head is not None:
            metrics += [self.sentence_loss_tracker, self.sentence_accuracy]
        return metrics

    # === Google checkpoint heads: cls/predictions/* and cls/seq_relationship/* ===

    def head_tensors(self) -> dict[str, np.ndarray]:
        """The heads' weights under Google's names, in Google's layout."""
        head = self.mlm_head
        tensors = {
            "cls/predictions/transform/dense/kernel": head._intermediate_dense.kernel.numpy(),
            "cls/predictions/transform/dense/bias": head._intermediate_dense.bias.numpy(),
            "cls/predictions/transform/LayerNorm/gamma": head._intermediate_layer_norm.gamma.numpy(),
            "cls/predictions/transform/LayerNorm/beta": head._intermediate_layer_norm.beta.numpy(),
            "cls/predictions/output_bias": head._bias.numpy(),
        }
        if self.sentence_head is not None:
            # Google stores the sentence head's kernel as (2, hidden).
            tensors["cls/seq_relationship/output_weights"] = self.sentence_head.kernel.numpy().T
            tensors["cls/seq_relationship/output_bias"] = self.sentence_head.bias.numpy()
        return {k: np.asarray(v, np.float32) for k, v in tensors.items()}

    def load_head_tensors(self, tensors: dict[str, np.ndarray], strict: bool = True) -> list[str]:
        """Assigns heads from Google-named tensors; returns the names it used.

        With `strict`, a missing MLM head tensor or a mis-shaped one raises `ValueError` naming it.
        """
        head = self.mlm_head
        targets = {
            "cls/predictions/transform/dense/kernel": (head._intermediate_dense.kernel, False),
            "cls/predictions/transform/dense/bias": (head._intermediate_dense.bias, False),
            "cls/predictions/transform/LayerNorm/gamma": (head._intermediate_layer_norm.gamma, False),
            "cls/predictions/transform/LayerNorm/beta": (head._intermediate_layer_norm.beta, False),
            "cls/predictions/output_bias": (head._bias, False),
        }
        if self.sentence_head is not None:
            targets["cls/seq_relationship/output_weights"] = (self.sentence_head.kernel, True)
            targets["cls/seq_relationship/output_bias"] = (self.sentence_head.bias, False)
        used = []
        for name, (variable, transpose) in targets.items():
            if name not in tensors:
                if strict:
                    raise ValueError(f"Checkpoint has no pretraining-head tensor {name}")
                continue
            array = tensors[name].T if transpose else tensors[name]
            if tuple(array.shape) != tuple(variable.shape):
                raise ValueError(f"{name} has shape {tensors[name].shape}, the head expects {variable.shape}")
            variable.assign(array)
            used.append(name)
        return used
