"""Answer spans from start/end logits, for evaluation and serving alike.

`best_spans` (dense TF ops, TFLite built-ins) finds the best span of each window; the serving graph calls
it on its one window, and `decode_answers` calls it on every window of every question and keeps the best
window, as google-research/bert `run_squad.py` (`write_predictions`) does: the span score is the start
plus end logit, answers start only on tokens that have their maximum context in the window, are at most
`max_answer_length` tokens long, start and end on pieces that hold characters of the context
(`answer_positions`), and SQuAD 2.0's null score is compared against a threshold. The search
is exhaustive over allowed (start, end) pairs rather than over run_squad's 20 best starts and ends, so it
never misses a higher-scoring span. The text is cut by character offsets, keeping the context's spelling.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import tensorflow as tf

from kbert.tasks.example import Example
from kbert.tasks.qa_features import QAFeatures


def answer_positions(in_context: Any, starts: Any, ends: Any) -> Any:
    """Where an answer may start and end: the context's pieces that span characters of it.

    A piece with an empty span (a byte-level piece of white space alone, "Ġ" before "!": its offsets are
    empty, as HF's) neither starts nor ends an answer. Ending there would end the answer on the white space
    before the next piece ("ran " for "ran"); an answer of it alone would be "".

    Args:
        in_context: `(batch, length)` bool. The context's pieces.
        starts, ends: `(batch, length)` int. Each piece's character span (end exclusive).

    Returns:
        `(batch, length)` bool, numpy or TF as the arguments are.

    Example:
    >>> answer_positions(np.array([[False, True, True]]), np.array([[0, 4, 4]]), np.array([[0, 4, 5]])).tolist()
    [[False, False, True]]
    """
    return in_context & (ends > starts)


def best_spans(start_logits: tf.Tensor, end_logits: tf.Tensor, allowed: tf.Tensor, max_answer_tokens: int,
               start_allowed: tf.Tensor | None = None) -> dict[str, tf.Tensor]:
    """The highest-scoring span `i <= j < i + max_answer_tokens` with both ends in `allowed`.

    Args:
        start_logits, end_logits: `(batch, length)` float32.
        allowed: `(batch, length)` bool. Positions that may end (and start) an answer.
        max_answer_tokens: int. Longest span in tokens.
        start_allowed: optional `(batch, length)` bool. Positions that may start an answer (default:
            `allowed`).

    Returns:
        dict of `(batch,)` int32 `start_token`, `end_token` (-1 when no position is allowed), float32
        `logit_score` (start + end logit), `null_logit_score` (the same at `[CLS]`), `score` (the
        span's probability under independent start and end softmaxes over the sequence) and
        `null_score` (the `[CLS]` "no answer" probability).
    """
    start_allowed = allowed if start_allowed is None else start_allowed
    length = tf.shape(start_logits)[1]
    # expand_dims, not [:, tf.newaxis]: TFLite has no built-in strided slice with a new axis on bools.
    i = tf.expand_dims(tf.range(length), 1)
    j = tf.expand_dims(tf.range(length), 0)
    shape_ok = tf.expand_dims((j >= i) & (j < i + max_answer_tokens), 0)  # (1, length, length)
    ok = shape_ok & tf.expand_dims(start_allowed, 2) & tf.expand_dims(allowed, 1)
    pair = tf.expand_dims(start_logits, 2) + tf.expand_dims(end_logits, 1)
    pair = tf.where(ok, pair, tf.float32.min)
    flat_pair = tf.reshape(pair, [tf.shape(pair)[0], -1])
    flat = tf.argmax(flat_pair, axis=1, output_type=tf.int32)
    any_ok = tf.reduce_any(tf.reshape(ok, [tf.shape(pair)[0], -1]), axis=1)
    start = tf.where(any_ok, flat // length, -1)
    end = tf.where(any_ok, flat % length, -1)
    start_p = tf.nn.softmax(start_logits, axis=-1)
    end_p = tf.nn.softmax(end_logits, axis=-1)
    score = (tf.gather(start_p, tf.maximum(start, 0), batch_dims=1)
             * tf.gather(end_p, tf.maximum(end, 0), batch_dims=1))
    return {
        "start_token": start,
        "end_token": end,
        "logit_score": tf.reduce_max(flat_pair, axis=1),
        "null_logit_score": start_logits[:, 0] + end_logits[:, 0],
        "score": tf.where(any_ok, score, 0.0),
        "null_score": start_p[:, 0] * end_p[:, 0],
    }


def decode_answers(
    examples: Sequence[Example],
    features: QAFeatures,
    start_logits: np.ndarray,
    end_logits: np.ndarray,
    *,
    max_answer_length: int = 30,
    version_2_with_negative: bool = False,
    null_score_diff_threshold: float = 0.0,
    return_spans: bool = False,
    batch_size: int = 64,
) -> dict[str, str] | tuple[dict[str, str], dict[str, dict[str, Any]]]:
    """Best answer text per question from the windows' logits (see the module docstring for the rules).

    Args:
        examples: the examples `features` was built from (need "id" and "context").
        features: `QAFeatures` from `build_qa_features`.
        start_logits, end_logits: float arrays (windows, sequence_length), one row per window.
        max_answer_length: int. Longest answer in tokens.
        version_2_with_negative: bool. Allow "no answer" (SQuAD 2.0): the answer is "" when the lowest
            `[CLS]` start + end over the windows minus the best span score > `null_score_diff_threshold`.
        null_score_diff_threshold: float. See above.
        return_spans: bool. Also return, per question, the best span's {"text", "score", "char_start",
            "char_end"} (char_start -1 when no window has a span).
        batch_size: int. Windows decoded per TF call.

    Returns:
        {id: answer text} (and {id: best span} with `return_spans`).

    Example:
    >>> answers = decode_answers(examples, features, start, end)  # doctest: +SKIP
    """
    start_logits = np.asarray(start_logits, np.float32)
    end_logits = np.asarray(end_logits, np.float32)
    if start_logits.shape != features.token_ids.shape or end_logits.shape != features.token_ids.shape:
        raise ValueError(f"logits of shape {start_logits.shape}/{end_logits.shape} do not match the "
                         f"{features.token_ids.shape} windows")
    in_context = answer_positions(features.char_starts >= 0, features.char_starts, features.char_ends)
    found = {k: [] for k in ("start_token", "end_token", "logit_score", "null_logit_score")}
    for i in range(0, len(features), batch_size):
        window = slice(i, i + batch_size)
        spans = best_spans(tf.constant(start_logits[window]), tf.constant(end_logits[window]),
                           tf.constant(in_context[window]), max_answer_length,
                           start_allowed=tf.constant(in_context[window] & features.max_context[window]))
        for key in found:
            found[key].append(spans[key].numpy())
    found = {k: np.concatenate(v) if v else np.zeros([0]) for k, v in found.items()}
    answers: dict[str, str] = {}
    best: dict[str, dict[str, Any]] = {}
    windows_of: dict[int, list[int]] = {}
    for window, index in enumerate(features.example_index.tolist()):
        windows_of.setdefault(index, []).append(window)
    for index, example in enumerate(examples):
        windows = [w for w in windows_of.get(index, []) if found["start_token"][w] >= 0]
        span = {"text": "", "score": float("-inf"), "char_start": -1, "char_end": -1}
        if windows:
            w = max(windows, key=lambda k: (found["logit_score"][k], -k))
            char_start = int(features.char_starts[w, found["start_token"][w]])
            char_end = int(features.char_ends[w, found["end_token"][w]])
            span = {"text": str(example["context"])[char_start:char_end], "score": float(found["logit_score"][w]),
                    "char_start": char_start, "char_end": char_end}
        text = span["text"]
        if version_2_with_negative and windows_of.get(index):
            null_score = min(float(found["null_logit_score"][w]) for w in windows_of[index])
            if null_score - span["score"] > null_score_diff_threshold:
                text = ""
        answers[str(example["id"])] = text
        best[str(example["id"])] = span
    return (answers, best) if return_spans else answers
