"""SQuAD exact match and token F1, with the official evaluation script's answer normalisation.

The normalisation (lower case, drop ASCII punctuation, drop the articles a/an/the, collapse whitespace)
and the max-over-gold-answers rule follow the official SQuAD v1.1 and v2.0 evaluation scripts
(Rajpurkar et al. 2016, 2018). SQuAD 2.0's no-answer rule: a question without gold answers is scored
against the empty string, so the empty prediction gets EM = F1 = 1 and anything else 0. Re-implemented
(the scripts are standalone files, not an installable library).
"""

from __future__ import annotations

import collections
import re
import string
from typing import Any, Iterable, Mapping, Sequence

_ARTICLES = re.compile(r"\b(a|an|the)\b", re.UNICODE)
_PUNCTUATION = frozenset(string.punctuation)


def normalize_answer(text: str) -> str:
    """Official SQuAD normalisation.

    Args:
        text: str. An answer.

    Returns:
        str: lower-cased, ASCII punctuation removed, articles a/an/the removed, whitespace collapsed.

    Example:
    >>> normalize_answer("The  Eiffel-Tower!")
    'eiffeltower'
    """
    text = text.lower()
    text = "".join(ch for ch in text if ch not in _PUNCTUATION)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def _gold_list(gold_answers: str | Sequence[str]) -> list[str]:
    answers = [gold_answers] if isinstance(gold_answers, str) else list(gold_answers)
    # SQuAD 2.0 rule: gold answers that normalise to nothing are dropped; none left means "no answer".
    answers = [a for a in answers if normalize_answer(a)]
    return answers or [""]


def _is_cjk(ch: str) -> bool:
    code = ord(ch)
    return (0x4E00 <= code <= 0x9FFF or 0x3400 <= code <= 0x4DBF or 0x20000 <= code <= 0x2FA1F
            or 0xF900 <= code <= 0xFAFF)


def _is_cjk_punctuation(ch: str) -> bool:
    code = ord(ch)
    return 0x3000 <= code <= 0x303F or 0xFF01 <= code <= 0xFF0F or 0xFF1A <= code <= 0xFF20 \
        or 0xFF3B <= code <= 0xFF40 or 0xFF5B <= code <= 0xFF65 or ch in "\u2018\u2019\u201c\u201d\u2026\u2014"


def answer_tokens(text: str) -> list[str]:
    """The tokens F1 counts: whitespace-separated words of the normalised answer, with every CJK character
    a token of its own and CJK punctuation dropped (CMRC 2018's mixed segmentation, Cui et al. 2019).
    ASCII text gets exactly the official SQuAD tokens.

    Example:
    >>> answer_tokens("北京大学 in 2019。")
    ['北', '京', '大', '学', 'in', '2019']
    """
    tokens: list[str] = []
    for word in normalize_answer(text).split():
        if word.isascii():
            tokens.append(word)
            continue
        piece = ""
        for ch in word:
            if _is_cjk(ch) or _is_cjk_punctuation(ch):
                if piece:
                    tokens.append(piece)
                piece = ""
                if _is_cjk(ch):
                    tokens.append(ch)
            else:
                piece += ch
        if piece:
            tokens.append(piece)
    return tokens


def _token_f1(prediction: str, gold: str) -> float:
    prediction_tokens = answer_tokens(prediction)
    gold_tokens = answer_tokens(gold)
    if not prediction_tokens or not gold_tokens:
        # No-answer on either side: 1 only if both are empty.
        return float(prediction_tokens == gold_tokens)
    common = collections.Counter(prediction_tokens) & collections.Counter(gold_tokens)
    num_same = sum(common.values())
    if num_same == 0:
        return 0.0
    precision = num_same / len(prediction_tokens)
    recall = num_same / len(gold_tokens)
    return 2 * precision * recall / (precision + recall)


def exact_match(prediction: str, gold_answers: str | Sequence[str]) -> float:
    """1.0 if the normalised prediction equals any normalised gold answer, else 0.0.

    Args:
        prediction: str. The predicted answer ("" for no answer).
        gold_answers: str or sequence of str. Gold answers; empty means the question has no answer.

    Returns:
        float, 0.0 or 1.0.

    Example:
    >>> exact_match("the Denver Broncos", ["Denver Broncos", "Broncos"])
    1.0
    """
    normalized = normalize_answer(prediction)
    return float(max(normalized == normalize_answer(g) for g in _gold_list(gold_answers)))


def token_f1(prediction: str, gold_answers: str | Sequence[str]) -> float:
    """Bag-of-tokens F1 between the normalised prediction and the best-matching gold answer.

    Args:
        prediction: str. The predicted answer ("" for no answer).
        gold_answers: str or sequence of str. Gold answers; empty means the question has no answer.

    Returns:
        float in [0, 1].

    Example:
    >>> round(token_f1("Denver Broncos team", ["Denver Broncos"]), 4)
    0.8
    """
    return max(_token_f1(prediction, g) for g in _gold_list(gold_answers))


def _answer_texts(example: Mapping[str, Any]) -> list[str]:
    answers = example.get("answers", [])
    return [a["text"] if isinstance(a, Mapping) else str(a) for a in answers]


def squad_evaluate(
    examples: Iterable[Mapping[str, Any]], predictions: Mapping[str, str]
) -> dict[str, float]:
    """Corpus-level SQuAD scores in percent, as the official scripts print them.

    Args:
        examples: iterable of dicts with "id" and "answers" (a list of {"text", "answer_start"} dicts or
            of strings); an empty "answers" list is a SQuAD 2.0 no-answer question.
        predictions: dict mapping question id -> predicted text ("" predicts no answer). A question with
            no prediction scores 0 (the official rule) and is counted in "num_missing".

    Returns:
        dict with "exact_match" and "f1" (percent, 0-100), "total", "num_missing", and, when any
        question has no answer, "has_answer_exact_match", "has_answer_f1", "no_answer_exact_match",
        "no_answer_f1", "has_answer_total", "no_answer_total" (the SQuAD 2.0 breakdown).

    Example:
    >>> squad_evaluate([{"id": "q1", "answers": [{"text": "Paris", "answer_start": 0}]}], {"q1": "paris"})
    {'exact_match': 100.0, 'f1': 100.0, 'total': 1, 'num_missing': 0}
    """
    exact: dict[str, list[float]] = {"has": [], "no": []}
    f1: dict[str, list[float]] = {"has": [], "no": []}
    missing = 0
    for example in examples:
        gold = _answer_texts(example)
        kind = "has" if any(normalize_answer(g) for g in gold) else "no"
        qid = example["id"]
        if qid not in predictions:
            missing += 1
            exact[kind].append(0.0)
            f1[kind].append(0.0)
            continue
        exact[kind].append(exact_match(predictions[qid], gold))
        f1[kind].append(token_f1(predictions[qid], gold))
    total = len(exact["has"]) + len(exact["no"])
    if total == 0:
        raise ValueError("no examples to evaluate")
    percent = lambda values, count: 100.0 * sum(values) / count if count else 0.0  # noqa: E731
    result: dict[str, float] = {
        "exact_match": percent(exact["has"] + exact["no"], total),
        "f1": percent(f1["has"] + f1["no"], total),
        "total": total,
        "num_missing": missing,
    }
    if exact["no"]:
        result.update(
            has_answer_exact_match=percent(exact["has"], len(exact["has"])),
            has_answer_f1=percent(f1["has"], len(f1["has"])),
            no_answer_exact_match=percent(exact["no"], len(exact["no"])),
            no_answer_f1=percent(f1["no"], len(f1["no"])),
            has_answer_total=len(exact["has"]),
            no_answer_total=len(exact["no"]),
        )
    return result
