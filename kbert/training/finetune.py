"""Fine-tuning and evaluation drivers behind `kbert finetune` and `kbert evaluate`, for any task.

`finetune(task, FinetuneConfig(...))` reads the data through the task (a file or `tfds:NAME[:SPLIT]`),
builds the task's model on a pretrained (or random) encoder, trains it with `model.fit` on BERT's AdamW +
linear warmup/decay schedule, writes a model directory (`kbert.save_model`), `DIR/metrics.json`,
`DIR/history.json` (the loss per epoch), `DIR/timings.json` (the seconds of each phase of the run) and, with
`init`, `DIR/init.json` (the weights it started from: for a Hugging Face Hub name, the repository and commit).
`evaluate_model` restores such a directory and scores it on any data source with the same code path, so
both print the same metrics. Nothing here knows a task kind: the task (`kbert.tasks`) does.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import time
from typing import Any, Sequence

import keras

import kbert.file_io as file_io
from kbert.optim.defaults import create_optimizer
from kbert.tasks import Task, get_task, load_model, save_model
from kbert.text import BertPreprocessor, BertTokenizer, load_tokenizer
from kbert.training.finetune_config import FinetuneConfig
from kbert.training.input_sharding import shard_across_workers, worker_count
from kbert.training.keras_multi_worker_patch import patch_model_for_multi_worker
from kbert.training.run_setup import build_encoder, run_setup
from kbert.training.time_callbacks import StepClock
from kbert.training.worker_outputs import write_dir
from kbert.training.xla import (check_fixed_shapes, compile_model, compiles_whole_step, explain_xla_errors,
                                fixed_steps_per_epoch)

METRICS_FILE = "metrics.json"
HISTORY_FILE = "history.json"
TIMINGS_FILE = "timings.json"
INIT_FILE = "init.json"
PHASES = ("load", "first_step", "train", "evaluate", "save")


def _start(config: FinetuneConfig, init: str | None) -> tuple[keras.Model, BertTokenizer]:
    if init is None and config.vocab is None:
        raise ValueError("training from random weights (no init directory) needs a vocabulary file (--vocab)")
    tokenizer = load_tokenizer(init if init is not None else config.vocab)
    return build_encoder(tokenizer.vocabulary_size(), init, config.preset), tokenizer


def format_phases(seconds: dict[str, float]) -> str:
    """"phases (s): load 2.1, first step 4.3, ..." for `finetune`'s `phase_seconds`, in `PHASES` order."""
    return "phases (s): " + ", ".join(f"{name.replace('_', ' ')} {seconds[name]:.1f}"
                                      for name in PHASES if name in seconds)


def finetune(task: Task | str, config: FinetuneConfig,
             callbacks: Sequence[keras.callbacks.Callback] = ()) -> dict[str, Any]:
    """Fine-tunes a BERT encoder on a task and writes a model directory with `metrics.json`.

    Args:
        task: a `kbert.tasks.Task` (e.g. `ClassificationTask(text_column="sentence")`) or a registered
            task name with default settings.
        config: `FinetuneConfig`.
        callbacks: extra Keras callbacks for `fit`.

    Returns:
        dict with "metrics" (as written to metrics.json, {} without validation), "train_examples"
        (the model's rows: `TaskData.size`), "train_seconds", "train_examples_per_second", "model_dir", "replicas" and
        "phase_seconds": the seconds of each of `PHASES` (also written to DIR/timings.json): "load" (from
        the call to the start of `fit`: reading the data, the encoder and tokenizer, the pipeline,
        `compile`), "first_step" (`fit`'s set-up, tracing and the first step), "train" (the other steps),
        "evaluate" (scoring the validation data; 0 without it) and "save" (the model directory).

    Example:
    >>> from kbert.tasks import ClassificationTask
    >>> finetune(ClassificationTask(text_column="sentence"),
    ...          FinetuneConfig(train="train.tsv", validation="dev.tsv", out="out/", init="minilm/"))  # doctest: +SKIP
    """
    started = time.monotonic()
    task = get_task(task) if isinstance(task, str) else task
    # A model name is resolved once, so the run reads, and records, one snapshot of it.
    init = file_io.resolve_source(config.init) if config.init is not None else None
    keras.utils.set_random_seed(config.seed)
    with run_setup(config.strategy, config.tpu, config.mixed_precision) as distribution:  # for this run only
        # Read after the strategy: a tfds source starts TensorFlow's runtime, after which a multi-worker
        # strategy can no longer configure its collective ops (`kbert.training.run_setup`).
        train_examples = task.read_examples(config.train, config.max_train_examples, split="train")
        task = task.prepare(config.train, train_examples)
        validation_examples = read_validation(task, config)
        fixed = compiles_whole_step(config.jit_compile, config.strategy)
        with distribution.scope():
            encoder, tokenizer = _start(config, init and init.path)
            limit = encoder.bert_config.max_sequence_length
            if config.sequence_length > limit:
                raise ValueError(f"sequence_length {config.sequence_length} exceeds the encoder's "
                                 f"{limit} positions")
            preprocessor = BertPreprocessor(tokenizer, config.sequence_length, padding="dynamic")
            train = task.dataset(train_examples, BertPreprocessor(tokenizer, config.sequence_length,
                                                                  padding="fixed" if fixed else "dynamic"),
                                 config.batch_size, training=True, seed=config.seed,
                                 group_by_length=config.group_by_length, drop_remainder=fixed)
            steps_per_epoch = None
            if fixed:
                check_fixed_shapes(train.dataset.element_spec)
                steps_per_epoch = fixed_steps_per_epoch(train.size, config.batch_size, config.steps_per_execution)
            steps = (steps_per_epoch or max(1, math.ceil(train.size / config.batch_size))) * config.epochs
            model = task.build_model(encoder, dropout=config.dropout, feature_based=config.feature_based)
            compile_model(model, jit_compile=fixed, steps_per_execution=config.steps_per_execution, loss=task.loss(),
                          optimizer=create_optimizer(config.learning_rate, steps, int(config.warmup_ratio * steps),
                                                     weight_decay=config.weight_decay))
            patch_model_for_multi_worker(model)  # Keras 3.15 fit under several replicas; no-op otherwise
        clock = StepClock()
        began = time.monotonic()
        # The examples are in memory: shard by record.
        train_data = shard_across_workers(train.dataset, worker_count(distribution))
        with explain_xla_errors(fixed):
            history = model.fit(train_data.repeat() if fixed else train_data, epochs=config.epochs,
                                steps_per_epoch=steps_per_epoch, verbose=config.verbose,
                                callbacks=[clock, *callbacks], shuffle=False)
        trained = time.monotonic()
        train_seconds = trained - began
        first_step_end = clock.first_batch_end or trained
        phases = {"load": began - started, "first_step": first_step_end - began, "train": trained - first_step_end}
        out = file_io.fspath(write_dir(config.out))  # other workers: scratch, removed by run_setup
        save_model(model, out, tokenizer, task, sequence_length=config.sequence_length,
                   truncate=preprocessor.truncate)
        if init is not None:
            file_io.write_json(file_io.join(out, INIT_FILE), init.record())
        write_history(out, history, steps // config.epochs)
        phases["save"] = time.monotonic() - trained
        evaluating = time.monotonic()
        metrics = evaluate_validation(model, task, validation_examples, preprocessor, config, out)
        phases["evaluate"] = time.monotonic() - evaluating
        phases = {name: phases[name] for name in PHASES}
        file_io.write_json(file_io.join(out, TIMINGS_FILE), {"phase_seconds": phases})
    return {"metrics": metrics, "train_examples": train.size, "train_seconds": train_seconds,
            "train_examples_per_second": train.size * config.epochs / train_seconds, "model_dir": str(config.out),
            "replicas": int(distribution.num_replicas_in_sync), "phase_seconds": phases}


def read_validation(task: Task, config: FinetuneConfig) -> list | None:
    """`config.validation`'s examples (None without it), their labels checked: a run fails before training."""
    if config.validation is None:
        return None
    examples = task.read_examples(config.validation, config.max_validation_examples, split="validation")
    task.check_labels(examples)
    return examples


def write_history(out: str, history: keras.callbacks.History, steps_per_epoch: int) -> None:
    """DIR/history.json: the steps of an epoch and each logged value per epoch."""
    file_io.write_text(file_io.join(out, HISTORY_FILE), json.dumps(
        {"steps_per_epoch": steps_per_epoch,
         "epochs": {k: [float(x) for x in v] for k, v in history.history.items()}}) + "\n")


def evaluate_validation(model: keras.Model, task: Task, examples: list | None, preprocessor: BertPreprocessor,
                        config: FinetuneConfig, out: str | None = None) -> dict[str, Any]:
    """The task's metrics of `model` on the validation examples ({} without them), written to DIR/metrics.json
    when `out` is given."""
    if examples is None:
        return {}
    metrics = task.evaluate(model, examples, preprocessor, batch_size=max(config.batch_size, 64),
                            verbose=config.verbose)
    if out is not None:
        file_io.write_json(file_io.join(out, METRICS_FILE), metrics)
    return metrics


def evaluate_model(
    directory: str | os.PathLike,
    data: str | os.PathLike,
    *,
    batch_size: int = 64,
    max_examples: int | None = None,
    verbose: int = 1,
    **settings: Any,
) -> dict[str, Any]:
    """Scores a model directory written by `finetune` on a data source (same metrics as metrics.json).

    Args:
        directory: the model directory.
        data: file path or `tfds:NAME[:SPLIT]`, read as validation data with the task settings saved in
            task.json.
        batch_size: int. Prediction batch size.
        max_examples: optional int. Score only the first N examples.
        verbose: int. 0 hides the progress bar.
        **settings: task settings that replace the saved ones for this evaluation (fields of the task's
            settings class, e.g. the columns to read).

    Returns:
        dict of metrics.

    Raises:
        ValueError: a name in `settings` is not a setting of the model's task.
    """
    model = load_model(directory, compile=False)
    task: Task = with_settings(model.task, settings)
    examples = task.read_examples(data, max_examples, split="validation")
    preprocessor = BertPreprocessor(model.tokenizer, model.preprocessor.sequence_length,
                                    truncate=model.preprocessor.truncate, padding="dynamic")
    return task.evaluate(model, examples, preprocessor, batch_size=batch_size, verbose=verbose)


def with_settings(task: Task, settings: dict[str, Any]) -> Task:
    """`task` with some of its settings replaced; ValueError naming any name that is not one of them."""
    known = {field.name for field in dataclasses.fields(task)}
    unknown = sorted(set(settings) - known)
    if unknown:
        raise ValueError(f"{', '.join(map(repr, unknown))}: not a setting of the {task.name} task; "
                         f"its settings are {sorted(known)}")
    return dataclasses.replace(task, **settings) if settings else task
