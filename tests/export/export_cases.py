"""Tiny task models and their exports, shared by the export tests."""

from __future__ import annotations

import pathlib

import keras
import numpy as np
import tensorflow as tf

import kbert
from conftest import TINY_VOCAB
from kbert.export import ExportSource, export
from kbert.tasks import (ClassificationTask, EmbeddingTask, EncoderTask, QuestionAnsweringTask, RegressionTask,
                         TaggingTask)

SEQ = 16
TAG_LABELS = ["O", "B-ANI", "I-ANI", "B-OBJ", "I-OBJ"]
TEXTS = ["The cats sat on the mat!", "a dog ran", "", "un affable dogs running , good ?",
         "the the the the the the the the the the the the the the the the the the"]
QUESTIONS = ["the cat?", "", "who ran on the mat the dog the cat the mat the dog the cat"]
CONTEXTS = ["a dog ran on the mat.", "cats sat", "the dog ran on the mat , the cat sat ."]


def encoder(dropout: float = 0.0) -> kbert.BertEncoder:
    return kbert.BertEncoder(vocab_size=len(TINY_VOCAB), hidden_size=16, num_hidden_layers=2,
                             num_attention_heads=2, intermediate_size=32, max_position_embeddings=32,
                             hidden_dropout_prob=dropout, attention_probs_dropout_prob=dropout)


def sources(dropout: float = 0.0) -> dict[str, ExportSource]:
    keras.utils.set_random_seed(1)
    tok = kbert.BertTokenizer(TINY_VOCAB)
    classifier = kbert.BertClassifier(encoder(dropout), 3, dropout=dropout)
    # Larger head weights, so the probabilities differ between inputs.
    classifier.get_layer("logits").kernel.assign(classifier.get_layer("logits").kernel * 200)
    tagger = kbert.BertTokenClassifier(encoder(dropout), len(TAG_LABELS), dropout=dropout)
    tagger.get_layer("logits").kernel.assign(tagger.get_layer("logits").kernel * 200)
    qa = kbert.BertQuestionAnswerer(encoder(dropout), dropout=dropout)
    qa.get_layer("span_logits").kernel.assign(qa.get_layer("span_logits").kernel * 200)
    return {
        "classify": ExportSource(classifier, tok, ClassificationTask(labels=["neg", "neu", "pos"]), SEQ),
        "regress": ExportSource(kbert.BertClassifier(encoder(dropout), 1, dropout=dropout), tok, RegressionTask(),
                                SEQ),
        "tag": ExportSource(tagger, tok, TaggingTask(labels=TAG_LABELS), SEQ),
        "qa": ExportSource(qa, tok, QuestionAnsweringTask(), SEQ, "waterfall"),
        "encoder": ExportSource(encoder(dropout), tok, EncoderTask(), SEQ),
        # Max pooling: the padding it masks with -inf must stay out of the SavedModel's and TFLite's answers.
        "embed": ExportSource(kbert.BertSentenceEmbedder(encoder(dropout), pooling="max"), tok,
                              EmbeddingTask(pooling="max"), SEQ),
    }


def y_encoder(source: ExportSource, x: dict[str, tf.Tensor]) -> np.ndarray:
    """The token vectors of a task model's encoder."""
    return source.model.encoder(x, training=False)["sequence_output"].numpy()


def inputs_of(task: str) -> dict[str, list[str]]:
    if task == "qa":
        return {"question": QUESTIONS, "context": CONTEXTS}
    return {"text": TEXTS}


def export_all(root: pathlib.Path, tflite: bool = True) -> tuple[dict, dict]:
    srcs = sources()
    paths = {task: export(src, root / task / "1", tflite=tflite) for task, src in srcs.items()}
    return srcs, paths


def reference(source: ExportSource, inputs: dict[str, list[str]], fast: bool = False) -> dict[str, np.ndarray]:
    """What the export should answer, computed from model(preprocessor(strings)) and plain Python."""
    tok = source.tokenizer
    if fast:
        tok = kbert.text.TFLiteBertTokenizer.from_tokenizer(tok)
    pre = kbert.BertPreprocessor(tok, sequence_length=SEQ, truncate=source.truncate)
    texts = list(inputs.values())
    x = pre(texts[0] if len(texts) == 1 else tuple(texts))
    x = {k: tf.cast(v, tf.int32) for k, v in x.items()}
    y = source.model(x, training=False)
    vocab = tok.get_vocabulary()
    if source.task.name == "classify":
        return {"probabilities": tf.nn.softmax(y).numpy()}
    if source.task.name == "regress":
        return {"score": y.numpy()[:, 0]}
    if source.task.name == "encoder":
        mask = x["padding_mask"].numpy()[:, :, None].astype("float32")
        mean = (y["sequence_output"].numpy() * mask).sum(1) / mask.sum(1)
        return {"pooled_output": y["pooled_output"].numpy(), "mean_embedding": mean,
                "embedding": mean / np.linalg.norm(mean, axis=-1, keepdims=True)}
    if source.task.name == "embed":
        tokens = np.where(x["padding_mask"].numpy()[:, :, None], y_encoder(source, x), -np.inf).max(1)
        return {"embedding": tokens / np.linalg.norm(tokens, axis=-1, keepdims=True)}
    ids = x["token_ids"].numpy()
    seg = x["segment_ids"].numpy()
    real = x["padding_mask"].numpy().astype(bool)
    if source.task.name == "tag":
        labels = np.argmax(y.numpy(), -1)
        words = []
        for b in range(len(ids)):
            row = [int(labels[b, i]) for i in range(1, len(ids[b]))
                   if real[b, i] and ids[b, i] != tok.sep_token_id and not vocab[ids[b, i]].startswith("##")]
            words.append(row)
        return {"word_label_id": words}
    start, end = y["start_logits"].numpy(), y["end_logits"].numpy()
    spans = []
    for b in range(len(ids)):
        ctx = [i for i in range(len(ids[b])) if seg[b, i] == 1 and real[b, i] and ids[b, i] != tok.sep_token_id]
        best = max(((start[b, i] + end[b, j], i, j) for i in ctx for j in ctx if i <= j < i + 30),
                   default=(None, -1, -1))
        spans.append(best[1:])
    return {"spans": spans}
