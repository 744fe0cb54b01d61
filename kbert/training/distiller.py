"""`Distiller`: a Keras model whose `fit` trains a student to answer like a teacher (knowledge distillation)."""

from __future__ import annotations

from typing import Any

import keras
import tensorflow as tf

from kbert.tasks.base import Task
from kbert.tasks.serving import MODEL_INPUTS


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
    labelled. `call` runs the student, so `predict` and `evaluate` see the student.

    Args:
        teacher: a kbert task model (`kbert.load_model(DIR)`).
        student: a task model of the same task with the teacher's outputs (`kbert.training.student.build_student`).
        task: the `kbert.tasks.Task` of both.
        temperature: float > 0. Softens both distributions of a logits output (2.0).
        alpha: float in [0, 1]. The weight of the distillation term on labelled batches (0.5).

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
                 alpha: float = 0.5, **kwargs: Any):
        super().__init__(**kwargs)
        check_distillation_settings(temperature, alpha)
        teacher.trainable = False
        self.teacher, self.student, self.task = teacher, student, task
        self.temperature, self.alpha = float(temperature), float(alpha)
        self.trackers = {name: keras.metrics.Mean(name=name) for name in ("loss", "distillation_loss", "label_loss")}

    def compile(self, optimizer: Any = "auto", loss: Any = "auto", **kwargs: Any) -> None:
        """Compiles the student with `optimizer` and its label loss (`loss`: e.g. `task.loss()`; "auto": the
        student's `default_loss()`), and the Distiller with the same optimizer; no XLA (the teacher runs on
        real tokens only at inference, `kbert.layers.token_packing`)."""
        self.student.compile(optimizer=optimizer, loss=loss)
        super().compile(optimizer=self.student.optimizer, jit_compile=False, **kwargs)

    @property
    def metrics(self) -> list[keras.metrics.Metric]:
        return list(self.trackers.values())

    def call(self, inputs: dict[str, tf.Tensor], training: bool | None = None) -> Any:
        return self.student(inputs, training=training)

    def distillation_step(self, inputs: dict[str, tf.Tensor], labels: Any, labelled: tf.Tensor,
                          training: bool = True) -> dict[str, tf.Tensor]:
        """The losses of one batch: {"loss", "distillation_loss", "label_loss"} (float32 scalars).

        Args:
            inputs: the batch's inputs (keys other than the model's are dropped).
            labels: the batch's labels (placeholders on an unlabelled batch).
            labelled: float (batch,) or scalar: 1.0 for a labelled batch, 0.0 for texts without labels.
            training: run the student in training mode (dropout).
        """
        inputs = {name: inputs[name] for name in MODEL_INPUTS}
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
        loss = weight * distillation + (1.0 - weight) * label
        return {"loss": loss, "distillation_loss": distillation, "label_loss": label, "has_labels": has_labels}

    def train_step(self, data: Any) -> dict[str, tf.Tensor]:
        inputs, labels, labelled = _unpack(data)
        with tf.GradientTape() as tape:
            losses = self.distillation_step(inputs, labels, labelled, training=True)
        variables = self.student.trainable_variables
        self.optimizer.apply(tape.gradient(losses["loss"], variables), variables)
        return self._track(losses)

    def test_step(self, data: Any) -> dict[str, tf.Tensor]:
        return self._track(self.distillation_step(*_unpack(data), training=False))

    def _track(self, losses: dict[str, tf.Tensor]) -> dict[str, tf.Tensor]:
        self.trackers["loss"].update_state(losses["loss"])
        self.trackers["distillation_loss"].update_state(losses["distillation_loss"])
        if self.alpha < 1.0:  # the label loss of labelled batches only (a placeholder's is no measure)
            self.trackers["label_loss"].update_state(losses["label_loss"], sample_weight=losses["has_labels"])
        return {name: tracker.result() for name, tracker in self.trackers.items()}


def _unpack(data: Any) -> tuple[Any, Any, tf.Tensor]:
    """(inputs, labels, labelled) of a batch of (inputs, labels[, labelled]); labelled 1.0 when absent."""
    inputs, labels, labelled = keras.utils.unpack_x_y_sample_weight(data)
    return inputs, labels, tf.ones([]) if labelled is None else labelled


def check_distillation_settings(temperature: float, alpha: float) -> None:
    """ValueError unless temperature > 0 and 0 <= alpha <= 1."""
    if not temperature > 0:
        raise ValueError(f"temperature must be > 0, got {temperature}")
    if not 0.0 <= alpha <= 1.0:
        raise ValueError(f"alpha must be in [0, 1], got {alpha}")
