"""`ServingModule`: tokenizer + packer + task model + the task's decoding as string-in `tf.function`s."""

from __future__ import annotations

from typing import Any, Callable

import keras
import tensorflow as tf

from kbert.tasks import task_from_info
from kbert.tasks.serving import STRING, ServingInputs
from kbert.text import BertTokenizer


class ServingModule(tf.Module):
    """Strings in, answers out: the signatures of a kbert export.

    Written as a plain `tf.Module` rather than `keras.export.ExportArchive`: the archive saves every
    weight twice (once per Keras variable, once per captured `tf.Variable`), while this module tracks each
    weight's `tf.Variable` exactly once and captures the Keras model only in function closures. The
    vocabulary lives in the graph (tensorflow-text's WordPiece model buffer and a string constant).

    Signatures (all inputs are batched `tf.string` of any batch size, `[batch]`):
        tokenize(text) -> token_ids (batch, n) int32 padded with [PAD], num_tokens (batch,)
        preprocess(text[, text_pair]) or preprocess(question, context) -> token_ids, segment_ids,
            padding_mask (batch, length) int32
        serving_default: the task's (see each task's `serving_functions` in `kbert.tasks`):
          classify(text[, text_pair]) -> probabilities (batch, C), label_id (batch,), label (batch,) str
          regress(text[, text_pair]) -> score (batch,)
          tag(text) -> num_words, word_start, word_end, word_label_id, word_label (+ word_text),
              num_entities, entity_type, entity_start, entity_end (+ entity_text)
          qa(question, context) -> start_char, end_char, score, no_answer_score (+ answer)
          encoder(text[, text_pair]) -> pooled_output (batch, H), mean_embedding (batch, H)
        classify/regress/encoder also get `serving_pair(text, text_pair)` (and `preprocess_pair`) when
        `serving_default` takes one text.

    Args:
        model: the Keras task model (or a `BertEncoder` for task "encoder"). Called with
            `training=False`, so dropout is off.
        tokenizer: `BertTokenizer`. For TFLite pass a `kbert.text.TFLiteBertTokenizer` (same ids and
            character offsets): no string slicing (`word_text`, `entity_text`, `answer`) is then in the
            graph, since TFLite has no kernel for it.
        task: a task name of `kbert.tasks.registry` ("classify", "regress", "tag", "qa" or "encoder").
        labels: label names in id order (classify and tag).
        sequence_length: the longest packed input; shorter batches run at their own length.
        truncate: "round_robin" or "waterfall".
        pair: whether `serving_default` takes `text_pair` (classify, regress, encoder).
        task_info: optional dict. More task settings (a model directory's task.json), e.g. qa's
            `max_answer_length`.

    Example:
    >>> module = ServingModule(model, tokenizer, "classify", labels=["neg", "pos"])  # doctest: +SKIP
    >>> tf.saved_model.save(module, "out", signatures=module.signatures())  # doctest: +SKIP
    """

    def __init__(self, model: keras.Model, tokenizer: BertTokenizer, task: str, labels: list[str] | None = None,
                 sequence_length: int = 128, truncate: str = "round_robin", pair: bool = False,
                 task_info: dict[str, Any] | None = None):
        super().__init__(name="kbert_serving")
        task_object = task_from_info({**(task_info or {}), "task": task, "labels": labels})
        self.task = task
        self.labels = list(labels) if labels else []
        self.pair = bool(pair)
        # Each weight's tf.Variable once (Keras variables wrap them; tracking both would save both).
        self.weights = [v.value for v in model.weights]
        inputs = ServingInputs(model, tokenizer, sequence_length, truncate)
        self.with_strings = inputs.with_strings

        @tf.function(input_signature=[STRING])
        def tokenize(text):
            ids = inputs.token_ids(text)
            return {"token_ids": ids.to_tensor(default_value=tokenizer.pad_token_id),
                    "num_tokens": tf.cast(ids.row_lengths(), tf.int32)}

        self._fns: dict[str, Callable] = {"tokenize": tokenize, **task_object.serving_functions(inputs, self.pair)}
        for name, fn in self._fns.items():
            setattr(self, name, fn)

    def signatures(self) -> dict[str, Any]:
        """`{signature name: tf.function}` for `tf.saved_model.save(..., signatures=...)`."""
        return dict(self._fns)
