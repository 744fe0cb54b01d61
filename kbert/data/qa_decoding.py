"""Start/end logits of every window -> answer text cut from the original context.

The n-best search over windows, the `max_answer_length` limit and SQuAD 2.0's null-score threshold
follow google-research/bert `run_squad.py` (`write_predictions`); the text is cut by character offsets
instead of re-aligning detokenized pieces, which keeps the context's own spelling and spacing.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from kbert.data.qa_features import QAFeatures

Example = dict[str, Any]


def _top(values: np.ndarray, allowed: np.ndarray, n: int) -> np.ndarray:
    candidates = np.nonzero(allowed)[0]
    order = np.argsort(-values[candidates], kind="stable")[:n]
    return candidates[order]


def decode_answers(
    examples: Sequence[Example],
    features: QAFeatures,
    start_logits: np.ndarray,
    end_logits: np.ndarray,
    *,
    n_best_size: int = 20,
    max_answer_length: int = 30,
    version_2_with_negative: bool = False,
    null_score_diff_threshold: float = 0.0,
    return_nbest: bool = False,
) -> dict[str, str] | tuple[dict[str, str], dict[str, list[dict[str, Any]]]]:
    """Best answer text per question from the windows' logits.

    For each window: the `n_best_size` highest start and end logits among context tokens; a pair is a
    candidate when end >= start, the span has at most `max_answer_length` tokens and the start token has
    its maximum context in this window. The score is start + end logit; the best candidate over all
    windows of a question wins. SQuAD 2.0: the null score is the lowest `[CLS]` start + end over the
    windows; the answer is "" when null score - best span score > `null_score_diff_threshold`.

    Args:
        examples: the examples `features` was built from (need "id" and "context").
        features: `QAFeatures` from `build_qa_features`.
        start_logits, end_logits: float arrays (windows, sequence_length), one row per window.
        n_best_size: int. Starts and ends considered per window (and n-best list length).
        max_answer_length: int. Longest answer in tokens.
        version_2_with_negative: bool. Allow "no answer" (SQuAD 2.0).
        null_score_diff_threshold: float. See above.
        return_nbest: bool. Also return the n-best list per question.

    Returns:
        {id: answer text} (and {id: [{"text", "score", "char_start", "char_end"}, ...]} with return_nbest).

    Example:
    >>> answers = decode_answers(examples, features, start, end)  # doctest: +SKIP
    """
    start_logits = np.asarray(start_logits, np.float32)
    end_logits = np.asarray(end_logits, np.float32)
    if start_logits.shape != features.token_ids.shape or end_logits.shape != features.token_ids.shape:
        raise ValueError(f"logits of shape {start_logits.shape}/{end_logits.shape} do not match the "
                         f"{features.token_ids.shape} windows")
    windows_of: dict[int, list[int]] = {}
    for window, index in enumerate(features.example_index.tolist()):
        windows_of.setdefault(index, []).append(window)
    answers: dict[str, str] = {}
    nbest: dict[str, list[dict[str, Any]]] = {}
    for index, example in enumerate(examples):
        candidates = []
        null_score = None
        for window in windows_of.get(index, []):
            s, e = start_logits[window], end_logits[window]
            in_context = features.char_starts[window] >= 0
            window_null = float(s[0] + e[0])
            null_score = window_null if null_score is None else min(null_score, window_null)
            for i in _top(s, in_context & features.max_context[window], n_best_size):
                for j in _top(e, in_context, n_best_size):
                    if j < i or j - i + 1 > max_answer_length:
                        continue
                    candidates.append((float(s[i] + e[j]), int(features.char_starts[window][i]),
                                       int(features.char_ends[window][j])))
        candidates.sort(key=lambda c: -c[0])
        context = str(example["context"])
        seen, best = set(), []
        for score, char_start, char_end in candidates:
            if (char_start, char_end) in seen:
                continue
            seen.add((char_start, char_end))
            best.append({"text": context[char_start:char_end], "score": score,
                         "char_start": char_start, "char_end": char_end})
            if len(best) == n_best_size:
                break
        text = best[0]["text"] if best else ""
        if version_2_with_negative and null_score is not None:
            if not best or null_score - best[0]["score"] > null_score_diff_threshold:
                text = ""
            best.append({"text": "", "score": null_score, "char_start": -1, "char_end": -1})
        answers[str(example["id"])] = text
        nbest[str(example["id"])] = best
    return (answers, nbest) if return_nbest else answers
