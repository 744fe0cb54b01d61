"""Fine-tuning and evaluation drivers behind `kbert finetune` and `kbert evaluate`, for any task.

`finetune(task, FinetuneConfig(...))` reads the data through the task (a file or `tfds:NAME[:SPLIT]`),
builds the task's model on a pretrained (or random) encoder, trains it with `model.fit` on BERT's AdamW +
linear warmup/decay schedule, writes a model directory (`kbert.save_model`), `DIR/metrics.json` and
`DIR/history.json` (the loss per epoch).
`evaluate_model` restores such a directory and scores it on any data source with the same code path, so
both print the same metrics. Nothing here knows a task kind: the task (`kbert.tasks`) does.
"""

from __future__ import annotations

import json
import math
import os
import pathlib
import time
from typing import Any, Sequence

import keras

from kbert.convert.checkpoints import load_pretrained, read_config
from kbert.models.bert_encoder import BertEncoder
from kbert.tasks import Task, get_task, load_model, save_model
from kbert.text import BertPreprocessor, BertTokenizer, load_tokenizer
from kbert.training.finetune_config import FinetuneConfig
from kbert.training.multi_worker import patch_model_for_multi_worker
from kbert.training.optimizers import create_optimizer, set_mixed_precision
from kbert.training.strategy import get_strategy

METRICS_FILE = "metrics.json"
HISTORY_FILE = "history.json"


def _start(config: FinetuneConfig) -> tuple[keras.Model, BertTokenizer]:
    if config.init is not None:
        return load_pretrained(config.init), load_tokenizer(config.init)
    if config.vocab is None:
        raise ValueError("training from random weights (no init directory) needs a vocabulary file (--vocab)")
    tokenizer = load_tokenizer(config.vocab)
    if pathlib.Path(config.preset).is_dir():  # a checkpoint's architecture, with fresh weights
        fields = {**read_config(config.preset).to_dict(), "vocab_size": tokenizer.vocabulary_size()}
        return BertEncoder(**fields), tokenizer
    return BertEncoder.from_preset(config.preset, vocab_size=tokenizer.vocabulary_size()), tokenizer


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
        (windows for QA), "train_seconds", "train_examples_per_second", "model_dir" and "replicas".

    Example:
    >>> from kbert.tasks import ClassificationTask
    >>> finetune(ClassificationTask(text_column="sentence"),
    ...          FinetuneConfig(train="train.tsv", validation="dev.tsv", out="out/", init="minilm/"))  # doctest: +SKIP
    """
    task = get_task(task) if isinstance(task, str) else task
    keras.utils.set_random_seed(config.seed)
    train_examples = task.read_examples(config.train, config.max_train_examples, config.train_articles)
    task = task.prepare(config.train, train_examples)
    validation_examples = None
    if config.validation is not None:
        validation_examples = task.read_examples(config.validation, config.max_validation_examples,
                                                 config.validation_articles)
        task.check_labels(validation_examples)  # fail before training, not after
    previous_policy = keras.config.dtype_policy().name
    set_mixed_precision(config.mixed_precision)
    try:
        distribution = get_strategy(config.strategy)
        with distribution.scope():
            encoder, tokenizer = _start(config)
            limit = encoder.bert_config.max_position_embeddings
            if config.sequence_length > limit:
                raise ValueError(f"sequence_length {config.sequence_length} exceeds the encoder's {limit} positions")
            preprocessor = BertPreprocessor(tokenizer, config.sequence_length, padding="dynamic")
            train = task.dataset(train_examples, preprocessor, config.batch_size, training=True, seed=config.seed,
                                 group_by_length=config.group_by_length)
            steps = max(1, math.ceil(train.size / config.batch_size)) * config.epochs
            model = task.build_model(encoder, dropout=config.dropout, feature_based=config.feature_based)
            model.compile(optimizer=create_optimizer(config.learning_rate, steps, int(config.warmup_ratio * steps),
                                                     weight_decay=config.weight_decay))
            patch_model_for_multi_worker(model)  # Keras 3.15 fit under several replicas; no-op otherwise
        began = time.perf_counter()
        history = model.fit(train.dataset, epochs=config.epochs, verbose=config.verbose, callbacks=list(callbacks),
                            shuffle=False)
        train_seconds = time.perf_counter() - began
        out = pathlib.Path(config.out)
        settings = {k: v for k, v in task.info().items() if k not in ("task", "labels")}
        save_model(model, out, tokenizer, labels=task.labels, sequence_length=config.sequence_length,
                   truncate=preprocessor.truncate, **settings)
        (out / HISTORY_FILE).write_text(json.dumps(
            {"steps_per_epoch": steps // config.epochs,
             "epochs": {k: [float(x) for x in v] for k, v in history.history.items()}}) + "\n", encoding="utf-8")
        metrics: dict[str, Any] = {}
        if validation_examples is not None:
            metrics = task.evaluate(model, validation_examples, preprocessor,
                                    batch_size=max(config.batch_size, 64), verbose=config.verbose)
            (out / METRICS_FILE).write_text(json.dumps(metrics, indent=2) + "\n", encoding="utf-8")
    finally:
        set_mixed_precision(previous_policy if previous_policy != "float32" else "none")
    return {"metrics": metrics, "train_examples": train.size, "train_seconds": train_seconds,
            "train_examples_per_second": train.size * config.epochs / train_seconds, "model_dir": str(out),
            "replicas": int(distribution.num_replicas_in_sync)}


def evaluate_model(
    directory: str | os.PathLike,
    data: str | os.PathLike,
    *,
    batch_size: int = 64,
    article_range: Sequence[int] | None = None,
    max_examples: int | None = None,
    verbose: int = 1,
) -> dict[str, Any]:
    """Scores a model directory written by `finetune` on a data source (same metrics as metrics.json).

    Args:
        directory: the model directory.
        data: file path or `tfds:NAME[:SPLIT]`, read with the settings saved in task.json.
        batch_size: int. Prediction batch size.
        article_range: optional (start, stop) articles of a SQuAD JSON file.
        max_examples: optional int. Score only the first N examples.
        verbose: int. 0 hides the progress bar.

    Returns:
        dict of metrics.
    """
    model = load_model(directory, compile=False)
    task: Task = model.task_object
    examples = task.read_examples(data, max_examples, article_range)
    preprocessor = BertPreprocessor(model.tokenizer, model.preprocessor.sequence_length,
                                    truncate=model.preprocessor.truncate, padding="dynamic")
    return task.evaluate(model, examples, preprocessor, batch_size=batch_size, verbose=verbose)
