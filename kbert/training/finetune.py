"""Fine-tuning and evaluation drivers behind `kbert finetune` and `kbert evaluate`, for any task.

`finetune(task, FinetuneConfig(...))` reads the data through the task (a file or `tfds:NAME[:SPLIT]`),
builds the task's model on a pretrained (or random) encoder, trains it with `model.fit` on BERT's AdamW +
linear warmup/decay schedule, writes a model directory (`kbert.save_model`), `DIR/metrics.json` and
`DIR/history.json` (the loss per epoch).
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
from kbert.convert.checkpoints import load_pretrained, read_config
from kbert.models.bert_encoder import BertEncoder
from kbert.tasks import Task, get_task, load_model, save_model
from kbert.text import BertPreprocessor, BertTokenizer, load_tokenizer
from kbert.training.multi_worker import patch_model_for_multi_worker
from kbert.training.optimizers import create_optimizer, set_mixed_precision
from kbert.training.strategy import get_strategy

METRICS_FILE = "metrics.json"
HISTORY_FILE = "history.json"


@dataclasses.dataclass
class FinetuneConfig:
    """How to fine-tune: data, starting point and BERT's recipe. Field names are `kbert finetune`'s flags.

    Args:
        train: training data, a file path or `tfds:NAME[:SPLIT]`.
        out: model directory to write.
        validation: validation data (None: no metrics.json).
        init: directory `kbert.load_pretrained` reads; None starts from a random `preset` encoder with the
            `vocab` vocabulary (the "from scratch" baseline).
        preset: encoder size without `init`: a preset name, or a checkpoint directory whose architecture
            is built with fresh weights (the baseline of the same model). vocab: vocab.txt without `init`.
        sequence_length: packing / window length.
        train_articles, validation_articles: (start, stop) article slices of SQuAD JSON files.
        epochs, batch_size, learning_rate, warmup_ratio, weight_decay: BERT's recipe (AdamW, linear warmup
            over `warmup_ratio` of the steps, then linear decay to 0; gradients clipped at 1).
            `batch_size` is the global batch, split over the replicas.
        dropout: head dropout. feature_based: freeze the encoder, train the head only.
        strategy: `kbert.training.strategy.get_strategy` name. mixed_precision: "none", "mixed_float16" or
            "mixed_bfloat16" (the previous policy is restored afterwards).
        max_train_examples, max_validation_examples: keep only the first N examples.
        group_by_length: batch training examples of similar length together (each run of 16 shuffled
            batches sorted by token count, `kbert.data_pipeline.index_batches`; for classification, each
            label in length order, interleaved in its share): dynamic padding then pads little. An epoch
            of 16 batches or fewer keeps random batches (sorted whole, it would be the same batches for
            every seed). False: plain random batches.
        seed: shuffling and initialisation seed. verbose: 0 silences Keras' progress bars.
    """

    train: str
    out: str
    validation: str | None = None
    init: str | None = None
    preset: str = "tiny"
    vocab: str | None = None
    sequence_length: int = 128
    train_articles: Sequence[int] | None = None
    validation_articles: Sequence[int] | None = None
    epochs: int = 3
    batch_size: int = 32
    learning_rate: float = 5e-5
    warmup_ratio: float = 0.1
    weight_decay: float = 0.01
    dropout: float = 0.1
    feature_based: bool = False
    strategy: str = "auto"
    mixed_precision: str = "none"
    max_train_examples: int | None = None
    max_validation_examples: int | None = None
    group_by_length: bool = True
    seed: int = 0
    verbose: int = 1


def _start(config: FinetuneConfig) -> tuple[keras.Model, BertTokenizer]:
    if config.init is not None:
        return load_pretrained(config.init), load_tokenizer(config.init)
    if config.vocab is None:
        raise ValueError("training from random weights (no init directory) needs a vocabulary file (--vocab)")
    tokenizer = load_tokenizer(config.vocab)
    if file_io.isdir(config.preset):  # a checkpoint's architecture, with fresh weights
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
        out = file_io.fspath(config.out)
        settings = {k: v for k, v in task.info().items() if k not in ("task", "labels")}
        save_model(model, out, tokenizer, labels=task.labels, sequence_length=config.sequence_length,
                   truncate=preprocessor.truncate, **settings)
        file_io.write_text(file_io.join(out, HISTORY_FILE), json.dumps(
            {"steps_per_epoch": steps // config.epochs,
             "epochs": {k: [float(x) for x in v] for k, v in history.history.items()}}) + "\n")
        metrics: dict[str, Any] = {}
        if validation_examples is not None:
            metrics = task.evaluate(model, validation_examples, preprocessor,
                                    batch_size=max(config.batch_size, 64), verbose=config.verbose)
            file_io.write_json(file_io.join(out, METRICS_FILE), metrics)
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
