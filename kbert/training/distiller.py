"""`Distiller`: a Keras model whose `fit` trains a student to answer like a teacher (knowledge distillation)."""

from __future__ import annotations

from typing import Any, Sequence

import keras
import tensorflow as tf

from kbert.tasks.base import Task
from kbert.tasks.serving import MODEL_INPUTS
from kbert.training.layer_losses import (attention_loss, check_layer_map, hidden_state_loss, last_blocks,
                                         uniform_layer_map)
from kbert.training.teacher_cache import TEACHER_OUTPUTS


class Distiller(keras.Model):
    """Trains `student` on the outputs of `teacher`, and on the labels where a batch has them.

    Each step runs the teacher in inference mode (`training=False`, its weights frozen: they are not among the
    Distiller's trainable weights) and the student in training mode on the same inputs, then descends

        loss = alpha * task.distillation_loss(teacher, student) + (1 - alpha) * label_loss(student)

    where `label_loss` is the student's own compiled loss (the task's: `task.loss()`, the model's defaults for
    "auto"), and `task.distillation_loss` is what the task says a student should match (soft targets at
    `temperature` for logits, the teacher's scores or vectors). What is particular to a task is asked of the
    task: the Distiller never looks at its kind.

    A batch may come with a third element, `labelled`, one number per row (1.0 or 0.0, the same over a batch):
    a batch of 0s is texts without labels (`Task.unlabelled_examples`, with placeholder labels), on which the
    student learns from the teacher alone (loss = distillation loss). Batches of (inputs, labels) count as
    labelled. `call` runs the student, so `predict` and `evaluate` see the student. Where a batch's inputs carry
    the teacher's outputs (`kbert.training.teacher_cache`, `kbert distill --cache-teacher`), the step takes them
    and does not run the teacher.

    With `hidden_weight` or `attention_weight` above 0 the student also learns what happens inside the teacher,
    on every batch (`kbert.training.layer_losses`): the loss adds hidden_weight * TinyBERT's hidden-state loss
    (the student's embeddings and layer outputs, through learned projections to the teacher's width, against
    the teacher's) and attention_weight * MiniLM's attention loss (KL of the last layer's attention
    distributions). Student layer m matches teacher layer `layer_map[m]`. Both encoders then run padded, with
    `BertEncoder.probe`, and the heads on their outputs (`BertTaskModel.head_model`). The projections belong to
    the Distiller: they train with the student and are not part of it.

    Args:
        teacher: a kbert task model (`kbert.load_model(DIR)`).
        student: a task model of the same task with the teacher's outputs (`kbert.training.student.build_student`).
        task: the `kbert.tasks.Task` of both.
        temperature: float > 0. Softens both distributions of a logits output (2.0).
        alpha: float in [0, 1]. The weight of the distillation term on labelled batches (0.5).
        hidden_weight: float >= 0. The weight of the hidden-state loss (0: off).
        attention_weight: float >= 0. The weight of the attention loss (0: off); the student must have the
            teacher's number of attention heads.
        layer_map: the teacher layer (0-based) each student layer matches, e.g. `build_student`'s
            `origin["layers"]`; None: TinyBERT's uniform map (`uniform_layer_map`).

    Call arguments:
        inputs: dict of `token_ids`, `segment_ids`, `padding_mask` (batch, seq).

    Returns:
        The student's outputs.

    Example:
    >>> import kbert
    >>> teacher = kbert.load_model("sst2_teacher/")  # doctest: +SKIP
    >>> student = build_student(teacher, teacher.task, layers=3)  # doctest: +SKIP
    >>> distiller = Distiller(teacher, student, teacher.task, temperature=2.0, alpha=0.5)  # doctest: +SKIP
    >>> distiller.compile(optimizer=keras.optimizers.AdamW(5e-5))  # doctest: +SKIP
    >>> distiller.fit(train_dataset, epochs=3)  # doctest: +SKIP
    """

    def __init__(self, teacher: keras.Model, student: keras.Model, task: Task, temperature: float = 2.0,
                 alpha: float = 0.5, hidden_weight: float = 0.0, attention_weight: float = 0.0,
                 layer_map: Sequence[int] | None = None, **kwargs: Any):
        super().__init__(**kwargs)
        check_distillation_settings(temperature, alpha, hidden_weight, attention_weight)
        teacher.trainable = False
        self.teacher, self.student, self.task = teacher, student, task
        self.temperature, self.alpha = float(temperature), float(alpha)
        self.hidden_weight, self.attention_weight = float(hidden_weight), float(attention_weight)
        names = ["loss", "distillation_loss", "label_loss"]
        names += [name for name, weight in (("hidden_loss", self.hidden_weight),
                                            ("attention_loss", self.attention_weight)) if weight > 0]
        self.trackers = {name: keras.metrics.Mean(name=name) for name in names}
        self.inner = self.hidden_weight > 0 or self.attention_weight > 0
        self.layer_map: list[int] | None = None
        if self.inner:
            self._build_inner(layer_map)

    def _build_inner(self, layer_map: Sequence[int] | None) -> None:
        """The layer map, the heads on probed encoders, and the projections of the hidden-state loss."""
        theirs, mine = self.teacher.encoder.bert_config, self.student.encoder.bert_config
        self.layer_map = check_layer_map(
            uniform_layer_map(theirs.num_hidden_layers, mine.num_hidden_layers) if layer_map is None else layer_map,
            theirs.num_hidden_layers, mine.num_hidden_layers)
        if self.attention_weight > 0 and theirs.num_attention_heads != mine.num_attention_heads:
            raise ValueError(f"the attention loss compares head by head: the student has {mine.num_attention_heads} "
                             f"attention heads, the teacher {theirs.num_attention_heads}")
        self.teacher_head, self.student_head = self.teacher.head_model(), self.student.head_model()
        # Identity at the start: at equal widths the loss starts as the states' own MSE (0 for a copied layer).
        self.projections = [keras.layers.Dense(theirs.hidden_size, kernel_initializer="identity", dtype="float32",
                                               name=name) for name in ("embeddings_to_teacher", "hidden_to_teacher")]
        for projection in self.projections:
            projection.build((None, None, mine.hidden_size))

    def compile(self, optimizer: Any = "auto", loss: Any = "auto", **kwargs: Any) -> None:
        """Compiles the student with `optimizer` and its label loss (`loss`: e.g. `task.loss()`; "auto": the
        student's `default_loss()`), and the Distiller with the same optimizer; no XLA (the teacher runs on
        real tokens only at inference, `kbert.layers.token_packing`)."""
        if self.inner:  # the optimizer's variables are made once: for the projections too
            if isinstance(optimizer, str):
                optimizer = self.student.default_optimizer() if optimizer == "auto" else keras.optimizers.get(optimizer)
            if not optimizer.built:
                optimizer.build(self.trainable_weights_of_step())
        self.student.compile(optimizer=optimizer, loss=loss)
        super().compile(optimizer=self.student.optimizer, jit_compile=False, **kwargs)

    @property
    def metrics(self) -> list[keras.metrics.Metric]:
        return list(self.trackers.values())

    def call(self, inputs: dict[str, tf.Tensor], training: bool | None = None) -> Any:
        return self.student(inputs, training=training)

    def trainable_weights_of_step(self) -> list[keras.Variable]:
        """What a training step updates: the student's trainable weights and the projections'."""
        projections = [w for p in self.projections for w in p.trainable_weights] if self.inner else []
        return self.student.trainable_variables + projections

    def distillation_step(self, inputs: dict[str, tf.Tensor], labels: Any, labelled: tf.Tensor,
                          training: bool = True) -> dict[str, tf.Tensor]:
        """The losses of one batch: {"loss", "distillation_loss", "label_loss"}, and "hidden_loss" and
        "attention_loss" when their weights are above 0 (float32 scalars).

        Args:
            inputs: the batch's inputs (keys other than the model's are dropped), and the teacher's outputs under
                `TEACHER_OUTPUTS` where a cache holds them (`kbert.training.teacher_cache`): then the teacher is
                not run.
            labels: the batch's labels (placeholders on an unlabelled batch).
            labelled: float (batch,) or scalar: 1.0 for a labelled batch, 0.0 for texts without labels.
            training: run the student in training mode (dropout).
        """
        cached = inputs.get(TEACHER_OUTPUTS)
        inputs = {name: inputs[name] for name in MODEL_INPUTS}
        if cached is not None and self.inner:
            raise ValueError("cached teacher outputs hold no layers: the hidden-state and attention losses need "
                             "the teacher run in the step")
        if cached is not None:
            teacher_outputs, student_outputs = cached, self.student(inputs, training=training)
        elif self.inner:
            teacher_inside = tf.nest.map_structure(tf.stop_gradient,
                                                   self._inside(self.teacher, self.teacher_head, inputs, False))
            student_inside = self._inside(self.student, self.student_head, inputs, training)
            teacher_outputs, student_outputs = teacher_inside["outputs"], student_inside["outputs"]
        else:
            teacher_outputs = tf.nest.map_structure(tf.stop_gradient, self.teacher(inputs, training=False))
            student_outputs = self.student(inputs, training=training)
        distillation = self.task.distillation_loss(teacher_outputs, student_outputs, inputs, self.temperature)
        weight = self.alpha
        if self.alpha < 1.0:  # alpha 1 trains on the teacher alone: the label loss is not even computed
            label = tf.cast(self.student.compute_loss(x=inputs, y=labels, y_pred=student_outputs), tf.float32)
            has_labels = tf.reduce_mean(tf.cast(labelled, tf.float32))
            weight = has_labels * self.alpha + (1.0 - has_labels)
        else:
            label = tf.zeros([], tf.float32)
            has_labels = tf.zeros([], tf.float32)
        losses = {"distillation_loss": distillation, "label_loss": label, "has_labels": has_labels}
        loss = weight * distillation + (1.0 - weight) * label
        if self.hidden_weight > 0:
            losses["hidden_loss"] = hidden_state_loss(teacher_inside["hidden_states"], student_inside["hidden_states"],
                                                      self.layer_map, *self.projections, inputs["padding_mask"])
            loss += self.hidden_weight * losses["hidden_loss"]
        if self.attention_weight > 0:  # the student's last layer against the teacher layer it matches
            losses["attention_loss"] = attention_loss(teacher_inside["attention_probs"][self.layer_map[-1]],
                                                      student_inside["attention_probs"][-1], inputs["padding_mask"])
            loss += self.attention_weight * losses["attention_loss"]
        return {"loss": loss, **losses}

    @staticmethod
    def _inside(model: keras.Model, head: keras.Model, inputs: dict[str, tf.Tensor], training: bool) -> dict[str, Any]:
        """A task model's outputs and its encoder's insides, from one padded run: {"outputs", "hidden_states" (the
        embeddings', then each layer's), "attention_probs" (each layer's last block's)}; `head` is its head_model."""
        inside = model.encoder.probe(inputs, training=training)
        given = [tf.convert_to_tensor(inputs[name]) for name in MODEL_INPUTS]
        outputs = head(given + [inside["sequence_output"], inside["pooled_output"]], training=training)
        attention = [inside["attention_probs"][i] for i in last_blocks(model.encoder)]
        return {"outputs": outputs, "hidden_states": inside["hidden_states"], "attention_probs": attention}

    def train_step(self, data: Any) -> dict[str, tf.Tensor]:
        inputs, labels, labelled = _unpack(data)
        with tf.GradientTape() as tape:
            losses = self.distillation_step(inputs, labels, labelled, training=True)
        variables = self.trainable_weights_of_step()
        self.optimizer.apply(tape.gradient(losses["loss"], variables), variables)
        return self._track(losses)

    def test_step(self, data: Any) -> dict[str, tf.Tensor]:
        return self._track(self.distillation_step(*_unpack(data), training=False))

    def _track(self, losses: dict[str, tf.Tensor]) -> dict[str, tf.Tensor]:
        self.trackers["loss"].update_state(losses["loss"])
        self.trackers["distillation_loss"].update_state(losses["distillation_loss"])
        if self.alpha < 1.0:  # the label loss of labelled batches only (a placeholder's is no measure)
            self.trackers["label_loss"].update_state(losses["label_loss"], sample_weight=losses["has_labels"])
        for name in ("hidden_loss", "attention_loss"):
            if name in self.trackers:
                self.trackers[name].update_state(losses[name])
        return {name: tracker.result() for name, tracker in self.trackers.items()}


def _unpack(data: Any) -> tuple[Any, Any, tf.Tensor]:
    """(inputs, labels, labelled) of a batch of (inputs, labels[, labelled]); labelled 1.0 when absent."""
    inputs, labels, labelled = keras.utils.unpack_x_y_sample_weight(data)
    return inputs, labels, tf.ones([]) if labelled is None else labelled


def check_distillation_settings(temperature: float, alpha: float, hidden_weight: float = 0.0,
                                attention_weight: float = 0.0) -> None:
    """ValueError unless temperature > 0, 0 <= alpha <= 1 and both layer-loss weights >= 0."""
    if not temperature > 0:
        raise ValueError(f"temperature must be > 0, got {temperature}")
    if not 0.0 <= alpha <= 1.0:
        raise ValueError(f"alpha must be in [0, 1], got {alpha}")
    for name, weight in (("hidden_weight", hidden_weight), ("attention_weight", attention_weight)):
        if not weight >= 0:
            raise ValueError(f"{name} must be >= 0, got {weight}")
