"""The distillation driver behind `kbert distill`: a teacher's model directory in, a student's model directory out.

`distill(DistillConfig(teacher=...), FinetuneConfig(train=..., out=...))` reads the data through the teacher's
task, builds the student (`kbert.training.student`), trains it with a `Distiller` (`model.fit`) on BERT's AdamW
schedule, and writes an ordinary model directory (`kbert.save_model`: `kbert evaluate` and `kbert export` take
it) with `metrics.json` and `history.json` as `kbert finetune` writes them, and `distillation.json`: the teacher
and the distillation's settings. The teacher's outputs are computed in each training step and never written,
unless `cache_teacher` names a directory for them (`kbert.training.teacher_cache`).
Nothing here knows a task kind: the task does.
"""

from __future__ import annotations

import math
from typing import Any, Sequence

import keras
import numpy as np
import tensorflow as tf

import kbert.file_io as file_io
from kbert.optim.defaults import create_optimizer
from kbert.tasks import Task, load_model, save_model
from kbert.tasks.base import TaskData
from kbert.tasks.registry import REGISTRY
from kbert.text import BertPreprocessor
from kbert.training.distill_config import NOT_DISTILLATION, DistillConfig
from kbert.training.distiller import Distiller, check_distillation_settings
from kbert.training.finetune import evaluate_validation, read_validation, with_settings, write_history
from kbert.training.finetune_config import FinetuneConfig
from kbert.training.run_setup import run_setup
from kbert.training.student import build_student
from kbert.training.teacher_cache import cached_teacher_batches
from kbert.training.worker_outputs import write_dir

DISTILLATION_FILE = "distillation.json"


def distill(config: DistillConfig, training: FinetuneConfig, task: str | None = None,
            callbacks: Sequence[keras.callbacks.Callback] = (), **settings: Any) -> dict[str, Any]:
    """Distils a teacher model directory into a smaller student and writes the student's model directory.

    Args:
        config: `DistillConfig`: the teacher, the student, temperature, alpha, the layer losses' weights,
            unlabelled texts.
        training: `FinetuneConfig`: the data (`train` may be None with `config.unlabelled`), `out`, and the
            training recipe; its fields in `NOT_DISTILLATION` must keep their defaults.
        task: optional task name the teacher must hold (e.g. "classify": a regression teacher is one too).
        callbacks: extra Keras callbacks for `fit`.
        **settings: task settings that replace the teacher's saved ones (e.g. `text_column`), as in
            `kbert.evaluate_model`.

    Returns:
        dict with "metrics" (the student's on `validation`, as in metrics.json), "teacher_metrics" (the
        teacher's on the same examples), "train_batches" (per epoch), "model_dir" and "distillation" (what
        distillation.json records).

    Raises:
        ValueError: the teacher is not a model directory of `task`, a student setting does not fit the teacher,
            alpha is out of [0, 1], a layer loss's weight is negative, the attention loss's head counts differ,
            no data, or a field of `NOT_DISTILLATION` is set.
    """
    _check_training(training)
    if training.train is None and not config.unlabelled:
        raise ValueError("nothing to train on: give training data (train) or unlabelled texts (unlabelled)")
    alpha = config.resolved_alpha(training.train is not None)
    check_distillation_settings(config.temperature, alpha, config.hidden_weight, config.attention_weight)
    if config.cache_teacher and (config.hidden_weight > 0 or config.attention_weight > 0):
        raise ValueError("cache_teacher keeps the teacher's outputs, not its layers: the hidden-state and attention "
                         "losses (hidden_weight, attention_weight) need the teacher run in each step")
    keras.utils.set_random_seed(training.seed)
    with run_setup(training.strategy, None, training.mixed_precision) as distribution:
        with distribution.scope():
            teacher = load_teacher(config.teacher, REGISTRY[task] if task else None)
            if task is not None and not isinstance(teacher.task, REGISTRY[task]):
                raise ValueError(f"{config.teacher} holds a {teacher.task.name} model, not a {task} model")
            task_: Task = with_settings(teacher.task, settings)
            train_examples = None
            if training.train is not None:
                train_examples = task_.read_examples(training.train, training.max_train_examples, split="train")
                task_.check_labels(train_examples)
            validation_examples = read_validation(task_, training)
            unlabelled = [e for source in config.unlabelled or () for e in task_.unlabelled_examples(source)]
            student, origin = build_student(teacher, task_, layers=config.student_layers, init=config.student_init,
                                            preset=config.student_preset, dropout=training.dropout)
            limit = student.encoder.bert_config.max_sequence_length
            if training.sequence_length > limit:
                raise ValueError(f"sequence_length {training.sequence_length} exceeds the student's {limit} positions")
            tokenizer, truncate = teacher.tokenizer, teacher.preprocessor.truncate
            packer = BertPreprocessor(tokenizer, training.sequence_length, truncate=truncate, padding="dynamic")
            parts = [(task_.dataset(examples, packer, training.batch_size, training=True, seed=training.seed + i,
                                    group_by_length=training.group_by_length), float(has_labels))
                     for i, (examples, has_labels) in enumerate(((train_examples, True), (unlabelled, False)))
                     if examples]
            data, batches = mixed_batches(parts, training.batch_size, training.seed)
            if config.cache_teacher:
                data = cached_teacher_batches(data, batches, teacher, file_io.fspath(config.cache_teacher),
                                              cache_key(config, training, task_, len(unlabelled)), training.seed)
            steps = batches * training.epochs
            distiller = Distiller(teacher, student, task_, temperature=config.temperature, alpha=alpha,
                                  hidden_weight=config.hidden_weight, attention_weight=config.attention_weight,
                                  layer_map=origin.get("layers"))
            distiller.compile(optimizer=create_optimizer(training.learning_rate, steps,
                                                         int(training.warmup_ratio * steps),
                                                         weight_decay=training.weight_decay), loss=task_.loss())
        history = distiller.fit(data, epochs=training.epochs, verbose=training.verbose, callbacks=list(callbacks),
                                shuffle=False)
        out = file_io.fspath(write_dir(training.out))
        save_model(student, out, tokenizer, task_, sequence_length=training.sequence_length, truncate=truncate)
        write_history(out, history, batches)
        metrics = evaluate_validation(student, task_, validation_examples, packer, training, out)
        teacher_metrics = evaluate_validation(teacher, task_, validation_examples, packer, training)
        record = {"teacher": file_io.fspath(config.teacher), "student": origin,
                  "teacher_layers": teacher.encoder.bert_config.num_hidden_layers,
                  "student_layers": student.encoder.bert_config.num_hidden_layers,
                  "temperature": config.temperature, "alpha": alpha, "hidden_weight": config.hidden_weight,
                  "attention_weight": config.attention_weight, "layer_map": distiller.layer_map,
                  "train": training.train,
                  "unlabelled": list(config.unlabelled or ()), "unlabelled_examples": len(unlabelled),
                  "cache_teacher": file_io.fspath(config.cache_teacher) if config.cache_teacher else None,
                  "teacher_metrics": teacher_metrics}
        file_io.write_json(file_io.join(out, DISTILLATION_FILE), record)
    return {"metrics": metrics, "teacher_metrics": teacher_metrics, "train_batches": batches,
            "model_dir": str(training.out), "distillation": record}


def load_teacher(path: str, task: type[Task] | None) -> keras.Model:
    """The teacher: a kbert model directory, or a model in a layout the task reads (`published_model_reader`)."""
    reader = task.published_model_reader if task is not None else None
    return reader(path) if reader is not None else load_model(path, compile=False)


def cache_key(config: DistillConfig, training: FinetuneConfig, task: Task, unlabelled: int) -> dict[str, Any]:
    """What the teacher's outputs on the training batches depend on: the teacher, the task's settings, the data and
    how it is batched (`cached_teacher_batches` refuses a cache of another key)."""
    return {"teacher": file_io.fspath(config.teacher), "task": task.info(),
            "train": file_io.fspath(training.train) if training.train is not None else None,
            "max_train_examples": training.max_train_examples,
            "unlabelled": [file_io.fspath(source) for source in config.unlabelled or ()],
            "unlabelled_examples": unlabelled, "sequence_length": training.sequence_length,
            "batch_size": training.batch_size, "group_by_length": training.group_by_length, "seed": training.seed,
            "mixed_precision": training.mixed_precision}


def mixed_batches(parts: list[tuple[TaskData, float]], batch_size: int, seed: int) -> tuple[tf.data.Dataset, int]:
    """One epoch of every part's batches, interleaved in a seeded random order, each batch with its `labelled`
    column (batch,): 1.0 for labelled data, 0.0 for texts without labels (`Distiller`).

    Args:
        parts: (the task's training `TaskData`, labelled) pairs.
        batch_size: int. The batch size (for a part whose number of batches tf.data cannot tell).
        seed: the order's seed (the same order every epoch; each part reshuffles its own batches).

    Returns:
        (the dataset of (inputs, labels, labelled), batches per epoch).
    """
    datasets, counts = [], []
    for data, labelled in parts:
        count = int(data.dataset.cardinality())
        count = count if count >= 0 else math.ceil(data.size / batch_size)
        counts.append(count)

        def mark(inputs, labels, labelled=labelled):
            return inputs, labels, tf.fill(tf.shape(inputs["token_ids"])[:1], labelled)

        datasets.append(data.dataset.map(mark))
    if len(datasets) == 1:
        return datasets[0], counts[0]
    order = np.concatenate([np.full(count, i, np.int64) for i, count in enumerate(counts)])
    np.random.default_rng(seed).shuffle(order)
    mixed = tf.data.Dataset.choose_from_datasets(datasets, tf.data.Dataset.from_tensor_slices(order))
    return mixed.apply(tf.data.experimental.assert_cardinality(len(order))), len(order)


def _check_training(training: FinetuneConfig) -> None:
    """ValueError naming a `FinetuneConfig` field a distillation does not take that is not at its default."""
    defaults = FinetuneConfig(train="", out="")
    changed = [name for name in NOT_DISTILLATION if getattr(training, name) != getattr(defaults, name)]
    if changed:
        raise ValueError(f"{', '.join(changed)}: not distillation settings (the student comes from the teacher: "
                         f"DistillConfig's student_layers, student_init or student_preset)")
