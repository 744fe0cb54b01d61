"""Fine-tuning and evaluation drivers behind `kbert finetune` and `kbert evaluate`.

`finetune` reads the data (file or `tfds:NAME[:SPLIT]`), builds the task model on a pretrained (or
random) encoder, trains it with `model.fit` on BERT's AdamW + linear warmup/decay schedule, writes a
model directory (`kbert.save_model`) and `DIR/metrics.json`. `evaluate_model` restores such a directory
and scores it on any data source with the same code path, so both print the same metrics.
"""

from __future__ import annotations

import json
import math
import os
import pathlib
import re
import time
from typing import Any, Sequence

import keras
import numpy as np
import tensorflow as tf

from kbert import data as task_data
from kbert.convert.checkpoints import load_pretrained
from kbert.data.classification_pipeline import classification_dataset, encode_labels
from kbert.data.qa_decoding import decode_answers
from kbert.data.qa_features import build_qa_features
from kbert.data.tagging_pipeline import encode_tags, tagging_dataset, word_predictions
from kbert.metrics import classification_metrics, entity_scores, regression_metrics, squad_evaluate
from kbert.models.bert_classifier import BertClassifier
from kbert.models.bert_encoder import BertEncoder
from kbert.models.bert_question_answerer import BertQuestionAnswerer
from kbert.models.bert_token_classifier import BertTokenClassifier
from kbert.text import BertPreprocessor, BertTokenizer, load_tokenizer
from kbert.training.model_dir import load_model, save_model
from kbert.training.multi_worker import patch_model_for_multi_worker
from kbert.training.optimizers import create_optimizer, set_mixed_precision
from kbert.training.strategy import get_strategy

TASKS = ("classify", "tag", "qa")
METRICS_FILE = "metrics.json"
_IOB_TAG = re.compile(r"^(O|[BIES]-.+)$")


def read_task_examples(task: str, source: str | os.PathLike, info: dict[str, Any],
                       limit: int | None = None) -> list[dict[str, Any]]:
    """Raw examples of `task` from a file or tfds source, with the column settings in `info`."""
    if task in ("classify", "regress"):
        examples = task_data.read_classification(
            source, text_column=info.get("text_column"), text_pair_column=info.get("text_pair_column"),
            label_column=info.get("label_column", "label"), regression=task == "regress")
    elif task == "tag":
        examples = task_data.read_tagging(source, tag_column=info.get("tag_column", "ner"))
    elif task == "qa":
        examples = task_data.read_squad(source, article_range=info.get("article_range"))
    else:
        raise ValueError(f"unknown task {task!r}; expected one of {TASKS}")
    if not examples:
        raise ValueError(f"{os.fspath(source)}: no examples")
    return examples[:limit] if limit else examples


def looks_like_regression(examples: Sequence[dict[str, Any]]) -> bool:
    """True when every label is a number and some are not integers (e.g. STS-B's 3.8)."""
    labels = [e["label"] for e in examples if e.get("label") is not None]
    try:
        values = [float(label) for label in labels]
    except (TypeError, ValueError):
        return False
    if labels and all(isinstance(label, float) for label in labels):
        return True
    return bool(values) and any(not v.is_integer() for v in values)


def check_labels(task: str, examples: Sequence[dict[str, Any]], labels: Sequence[str] | None) -> None:
    """Raises ValueError naming the first label (or tag) that is not in the model's vocabulary."""
    if task in ("classify", "regress"):
        encode_labels(examples, labels, regression=task == "regress")
    elif task == "tag":
        encode_tags(examples, labels)


def _dataset(task: str, examples, tokenizer: BertTokenizer, info: dict[str, Any], batch_size: int,
             training: bool, seed: int = 0):
    """(tf.data pipeline, extra) for a task; extra holds what decoding needs (QA features)."""
    length, labels = info["sequence_length"], info.get("labels")
    preprocessor = BertPreprocessor(tokenizer, length, truncate=info.get("truncate", "round_robin"),
                                    padding="dynamic")
    if task in ("classify", "regress"):
        return classification_dataset(examples, preprocessor, labels, regression=task == "regress",
                                      batch_size=batch_size, shuffle=training, seed=seed,
                                      with_labels=training), None
    if task == "tag":
        return tagging_dataset(examples, preprocessor, labels, batch_size=batch_size, shuffle=training,
                               seed=seed, with_labels=training, keep_word_ids=not training), None
    features = build_qa_features(examples, tokenizer, length, info.get("doc_stride", 128),
                                 info.get("max_query_length", 64))
    return features.dataset(batch_size, with_labels=training, shuffle=training, seed=seed), features


def predict_and_score(model: keras.Model, task: str, info: dict[str, Any], tokenizer: BertTokenizer,
                      examples: Sequence[dict[str, Any]], batch_size: int = 64,
                      verbose: int = 1) -> dict[str, Any]:
    """Runs `model` over `examples` and returns the task's metrics (the content of metrics.json)."""
    check_labels(task, examples, info.get("labels"))
    dataset, features = _dataset(task, examples, tokenizer, info, batch_size, training=False)
    progress = keras.utils.Progbar(None, verbose=verbose, unit_name="batch")
    # A plain traced call, not `predict_on_batch`: under a several-replica strategy Keras 3.15 feeds the
    # whole batch to every replica and concatenates the copies.
    forward = tf.function(lambda x: model(x, training=False), reduce_retracing=True)
    outputs = []
    for step, inputs in enumerate(dataset):
        word_ids = inputs.pop("word_ids", None)
        out = tf.nest.map_structure(lambda t: t.numpy(), forward(inputs))
        outputs.append((out, None if word_ids is None else word_ids.numpy()))
        progress.update(step + 1)
    if verbose:
        print()
    metrics: dict[str, Any]
    if task in ("classify", "regress"):
        predicted = np.concatenate([o for o, _ in outputs])
        if task == "regress":
            metrics = regression_metrics([float(e["label"]) for e in examples], predicted[:, 0].tolist())
        else:
            index_of = {name: i for i, name in enumerate(info["labels"])}
            gold = [index_of.get(str(e["label"]), -1) for e in examples]
            guess = np.argmax(predicted, -1).tolist()
            positive = 1 if len(info["labels"]) == 2 else max(set(gold) | set(guess))
            metrics = classification_metrics(gold, guess, positive_label=positive)
    elif task == "tag":
        names = info["labels"]
        default = names.index("O") if "O" in names else 0
        gold, guess, i = [], [], 0
        for logits, word_ids in outputs:
            for row in range(len(logits)):
                words = examples[i]["words"]
                guess.append([names[t] for t in word_predictions(logits[row], word_ids[row], len(words), default)])
                gold.append(list(examples[i]["tags"]))
                i += 1
        flat_gold = [t for s in gold for t in s]
        flat_guess = [t for s in guess for t in s]
        metrics = {"accuracy": float(np.mean([a == b for a, b in zip(flat_gold, flat_guess)]))}
        if all(_IOB_TAG.match(t) for t in flat_gold):
            scores = entity_scores(gold, guess)
            metrics.update(precision=scores["precision"], recall=scores["recall"], f1=scores["f1"],
                           per_type=scores["per_type"])
    else:
        start = np.concatenate([o["start_logits"] for o, _ in outputs])
        end = np.concatenate([o["end_logits"] for o, _ in outputs])
        version_2 = any(e.get("is_impossible") for e in examples)
        answers = decode_answers(examples, features, start, end,
                                 max_answer_length=info.get("max_answer_length", 30),
                                 version_2_with_negative=version_2,
                                 null_score_diff_threshold=info.get("null_score_diff_threshold", 0.0))
        metrics = squad_evaluate(examples, answers)
    metrics["num_examples"] = len(examples)
    return metrics


def _start(init: str | os.PathLike | None, preset: str, vocab: str | os.PathLike | None):
    if init is not None:
        return load_pretrained(init), load_tokenizer(init)
    if vocab is None:
        raise ValueError("training from random weights (no init directory) needs a vocabulary file")
    tokenizer = load_tokenizer(vocab)
    return BertEncoder.from_preset(preset, vocab_size=tokenizer.vocabulary_size()), tokenizer


def finetune(
    task: str,
    init: str | os.PathLike | None,
    train: str | os.PathLike,
    validation: str | os.PathLike | None,
    out: str | os.PathLike,
    *,
    preset: str = "tiny",
    vocab: str | os.PathLike | None = None,
    text_column: str | None = None,
    text_pair_column: str | None = None,
    label_column: str = "label",
    regression: bool | None = None,
    tag_column: str | int = "ner",
    sequence_length: int = 128,
    doc_stride: int = 128,
    max_query_length: int = 64,
    max_answer_length: int = 30,
    train_article_range: Sequence[int] | None = None,
    validation_article_range: Sequence[int] | None = None,
    epochs: int = 3,
    batch_size: int = 32,
    learning_rate: float = 5e-5,
    warmup_ratio: float = 0.1,
    weight_decay: float = 0.01,
    dropout: float = 0.1,
    feature_based: bool = False,
    strategy: str = "auto",
    mixed_precision: str = "none",
    max_train_examples: int | None = None,
    max_validation_examples: int | None = None,
    seed: int = 0,
    verbose: int = 1,
    callbacks: Sequence[keras.callbacks.Callback] = (),
) -> dict[str, Any]:
    """Fine-tunes a BERT encoder on a task and writes a model directory with `metrics.json`.

    Args:
        task: "classify" (also regression: `regression=True`, or auto-detected from float labels),
            "tag" or "qa".
        init: directory `kbert.load_pretrained` reads; None starts from a random `preset` encoder
            with the `vocab` vocabulary (the "from scratch" baseline).
        train, validation: file paths or `tfds:NAME[:SPLIT]`; validation may be None (no metrics.json).
        out: model directory to write.
        text_column, text_pair_column, label_column: classification columns.
        tag_column: CoNLL column ("ner", "pos", "chunk" or an index) or tfds feature.
        sequence_length: packing / window length.
        doc_stride, max_query_length, max_answer_length: QA windowing and decoding.
        train_article_range, validation_article_range: (start, stop) article slices of SQuAD JSON files.
        epochs, batch_size, learning_rate, warmup_ratio, weight_decay: BERT's recipe (AdamW, linear
            warmup over `warmup_ratio` of the steps, then linear decay to 0; gradients clipped at 1).
            `batch_size` is the global batch.
        dropout: head dropout. feature_based: freeze the encoder.
        strategy: `kbert.training.strategy.get_strategy` name. mixed_precision: "none",
            "mixed_float16" or "mixed_bfloat16" (the previous policy is restored afterwards).
        max_train_examples, max_validation_examples: keep only the first N examples.
        seed: shuffling and initialisation seed. verbose: 0 silences Keras' progress bars.
        callbacks: extra Keras callbacks for `fit`.

    Returns:
        dict with "metrics" (as written to metrics.json, {} without validation), "train_examples"
        (windows for QA), "train_seconds", "train_examples_per_second", "model_dir" and "replicas".

    Example:
    >>> finetune("classify", "minilm/", "train.tsv", "dev.tsv", "out/", text_column="sentence")  # doctest: +SKIP
    """
    if task not in TASKS:
        raise ValueError(f"task must be one of {TASKS}, got {task!r}")
    keras.utils.set_random_seed(seed)
    info: dict[str, Any] = {"sequence_length": int(sequence_length), "truncate": "round_robin"}
    if task == "classify":
        info.update(text_column=text_column, text_pair_column=text_pair_column, label_column=label_column)
    elif task == "tag":
        info.update(tag_column=tag_column)
    else:
        info.update(doc_stride=doc_stride, max_query_length=max_query_length, max_answer_length=max_answer_length)
    read_info = dict(info, article_range=train_article_range)
    train_examples = read_task_examples(task, train, read_info, max_train_examples)
    if task == "classify" and (regression if regression is not None else looks_like_regression(train_examples)):
        task = "regress"
    if task == "classify":
        info["labels"] = (task_data.source_label_names(train, label_column)
                          or task_data.build_label_vocabulary(e["label"] for e in train_examples))
    elif task == "tag":
        column = tag_column if isinstance(tag_column, str) else "ner"
        info["labels"] = (task_data.source_label_names(train, column)
                          or task_data.build_label_vocabulary(t for e in train_examples for t in e["tags"]))
    validation_examples = None
    if validation is not None:
        validation_examples = read_task_examples(
            task, validation, dict(info, article_range=validation_article_range), max_validation_examples)
        check_labels(task, validation_examples, info.get("labels"))  # fail before training, not after

    previous_policy = keras.config.dtype_policy().name
    set_mixed_precision(mixed_precision)
    try:
        distribution = get_strategy(strategy)
        with distribution.scope():
            encoder, tokenizer = _start(init, preset, vocab)
            limit = encoder.bert_config.max_position_embeddings
            if sequence_length > limit:
                raise ValueError(f"sequence_length {sequence_length} exceeds the encoder's {limit} positions")
            train_data, features = _dataset(task, train_examples, tokenizer, info, batch_size, True, seed)
            num_train = len(features) if features is not None else len(train_examples)
            steps = max(1, math.ceil(num_train / batch_size)) * epochs
            if task in ("classify", "regress"):
                model = BertClassifier(encoder, 1 if task == "regress" else len(info["labels"]),
                                       dropout=dropout, feature_based=feature_based)
            elif task == "tag":
                model = BertTokenClassifier(encoder, len(info["labels"]), dropout=dropout,
                                            feature_based=feature_based)
            else:
                model = BertQuestionAnswerer(encoder, dropout=dropout, feature_based=feature_based)
            model.compile(optimizer=create_optimizer(learning_rate, steps, int(warmup_ratio * steps),
                                                     weight_decay=weight_decay))
            patch_model_for_multi_worker(model)  # Keras 3.15 fit under several replicas; no-op otherwise
        began = time.perf_counter()
        model.fit(train_data, epochs=epochs, verbose=verbose, callbacks=list(callbacks), shuffle=False)
        train_seconds = time.perf_counter() - began
        out = pathlib.Path(out)
        save_model(model, out, tokenizer, labels=info.pop("labels", None), sequence_length=sequence_length,
                   truncate=info.pop("truncate"), **{k: v for k, v in info.items() if k != "sequence_length"})
        metrics: dict[str, Any] = {}
        if validation_examples is not None:
            saved_info = json.loads((out / "task.json").read_text(encoding="utf-8"))
            metrics = predict_and_score(model, task, saved_info, tokenizer, validation_examples,
                                        batch_size=max(batch_size, 64), verbose=verbose)
            (out / METRICS_FILE).write_text(json.dumps(metrics, indent=2) + "\n", encoding="utf-8")
    finally:
        set_mixed_precision(previous_policy if previous_policy != "float32" else "none")
    return {"metrics": metrics, "train_examples": num_train, "train_seconds": train_seconds,
            "train_examples_per_second": num_train * epochs / train_seconds, "model_dir": str(out),
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
        data: file path or `tfds:NAME[:SPLIT]`, read with the columns saved in task.json.
        batch_size: int. Prediction batch size.
        article_range: optional (start, stop) articles of a SQuAD JSON file.
        max_examples: optional int. Score only the first N examples.
        verbose: int. 0 hides the progress bar.

    Returns:
        dict of metrics.
    """
    model = load_model(directory, compile=False)
    info = dict(model.task_info, article_range=article_range)
    examples = read_task_examples(model.task, data, info, max_examples)
    return predict_and_score(model, model.task, model.task_info, model.tokenizer, examples,
                             batch_size=batch_size, verbose=verbose)
