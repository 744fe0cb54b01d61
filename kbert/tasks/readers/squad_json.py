"""Question-answering examples from SQuAD JSON (v1.1 and v2.0).

Each question becomes `{"id", "question", "context", "answers": [{"text", "answer_start"}],
"is_impossible"}`; `answer_start` is a character offset into `context`, checked against the answer text
(answers that do not match are skipped with a warning, or are errors with `strict_answers=True`).
Written here because the format is a small nested JSON and tfds reads only its own prepared copies.
"""

from __future__ import annotations

import json
import os
import warnings
from typing import Any, Mapping, Sequence

import kbert.file_io as file_io
from kbert.tasks.example import Example


class AnswerOffsetWarning(UserWarning):
    """Answers whose `answer_start` does not point at their text were skipped."""


def answer_problem(context: str, answer: Mapping[str, Any]) -> str | None:
    """Why an answer is not at its `answer_start` in `context` (a message), or None when it is."""
    start, text = answer["answer_start"], answer["text"]
    if not 0 <= start <= len(context) - len(text):
        return f"answer {text!r} at answer_start {start} runs outside the context of {len(context)} characters"
    found = context[start : start + len(text)]
    if found != text:
        return f"answer {text!r} is not at answer_start {start} (the context has {found!r} there)"
    return None


def check_answers(example: Mapping[str, Any], source: str = "") -> None:
    """Raises ValueError naming the question id when an answer is not at its `answer_start`.

    Args:
        example: dict. A QA example dict.
        source: str. File or dataset name for the message.

    Example:
    >>> check_answers({"id": "q", "context": "in Paris", "answers": [{"text": "Paris", "answer_start": 3}]})
    """
    for answer in example["answers"]:
        problem = answer_problem(example["context"], answer)
        if problem:
            where = f"{source}: " if source else ""
            raise ValueError(f"{where}question {example['id']!r}: {problem}")


def keep_matching_answers(examples: Sequence[Example], source: str = "", strict: bool = False,
                          shown: int = 5) -> list[Example]:
    """Drops answers that are not at their `answer_start`, with one warning that counts and names them.

    Real data has such answers (200 of CMRC 2018's 9,657 dev answers have answer_start -1 or an offset
    that does not match the text); like Google's `run_squad.py` and Hugging Face's pipelines, they are
    skipped. A question left without answers is dropped (for training and for evaluation); one that keeps
    some is scored against the texts that remain.

    Args:
        examples: sequence of QA example dicts.
        source: str. File or dataset name for the messages.
        strict: bool. Raise ValueError at the first such answer instead (`check_answers`).
        shown: int. Question ids named in the warning.

    Returns:
        list of the examples, with only matching answers, without the questions that have none left.

    Example:
    >>> import warnings
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")
    ...     kept = keep_matching_answers([{"id": "q", "context": "in Paris", "is_impossible": False,
    ...         "answers": [{"text": "Paris", "answer_start": -1}, {"text": "Paris", "answer_start": 3}]}])
    >>> kept[0]["answers"]
    [{'text': 'Paris', 'answer_start': 3}]
    """
    kept: list[Example] = []
    bad_ids: list[str] = []
    bad_answers = total = dropped = 0
    for example in examples:
        if strict:
            check_answers(example, source)
        good = [a for a in example["answers"] if answer_problem(example["context"], a) is None]
        total += len(example["answers"])
        if len(good) < len(example["answers"]):
            bad_answers += len(example["answers"]) - len(good)
            bad_ids.append(str(example["id"]))
            if not good and not example.get("is_impossible"):
                dropped += 1
                continue
            example = {**example, "answers": good}
        kept.append(example)
    if bad_answers:
        names = ", ".join(repr(i) for i in bad_ids[:shown]) + (", ..." if len(bad_ids) > shown else "")
        warnings.warn(
            f"{source or 'SQuAD data'}: skipped {bad_answers} of {total} answers whose answer_start does not "
            f"point at their text, in {len(bad_ids)} question(s) ({names}); {dropped} question(s) had no "
            "other answer and were dropped. Pass strict_answers=True (--strict-answers) to stop at the first.",
            AnswerOffsetWarning, stacklevel=2)
    return kept


def _article_slice(article_range: Sequence[int] | range | None, num_articles: int, source: str) -> range:
    if article_range is None:
        return range(num_articles)
    if isinstance(article_range, range):
        selected = article_range
    else:
        if len(article_range) != 2:
            raise ValueError(f"article_range must be (start, stop), got {article_range!r}")
        selected = range(*article_range)
    if not selected or selected.start < 0 or selected[-1] >= num_articles:
        raise ValueError(f"{source}: article_range {article_range!r} is outside the {num_articles} articles")
    return selected


def squad_examples(
    data: Mapping[str, Any],
    *,
    source: str = "<squad json>",
    article_range: Sequence[int] | range | None = None,
    validate_answers: bool = True,
    strict_answers: bool = False,
) -> list[Example]:
    """Flattens a parsed SQuAD JSON document into QA examples.

    Args:
        data: dict. The parsed JSON: {"version", "data": [{"title", "paragraphs": [{"context", "qas"}]}]}.
        source: str. Name used in error messages (the file path).
        article_range: optional (start, stop) or range. Keep only these articles (`data["data"][start:stop]`),
            e.g. (0, 40) and (40, 48) split the v1.1 dev file into train and evaluation parts.
        validate_answers: bool. Check that every answer_start points at its answer text; answers that do
            not are skipped with a warning (`keep_matching_answers`).
        strict_answers: bool. Raise ValueError naming the first such answer instead of skipping it.

    Returns:
        list of {"id": str, "question": str, "context": str, "answers": [{"text": str,
        "answer_start": int}], "is_impossible": bool}. Impossible (v2.0) questions have no answers.

    Example:
    >>> doc = {"data": [{"title": "t", "paragraphs": [{"context": "in Paris", "qas": [
    ...     {"id": "q", "question": "Where?", "answers": [{"text": "Paris", "answer_start": 3}]}]}]}]}
    >>> squad_examples(doc)[0]["answers"]
    [{'text': 'Paris', 'answer_start': 3}]
    """
    articles = data.get("data") if isinstance(data, Mapping) else None
    if not isinstance(articles, list):
        raise ValueError(f"{source}: not SQuAD JSON (no top-level 'data' list)")
    examples: list[Example] = []
    for article_index in _article_slice(article_range, len(articles), source):
        for paragraph in articles[article_index].get("paragraphs", []):
            context = paragraph.get("context")
            if not isinstance(context, str):
                raise ValueError(f"{source}: article {article_index} has a paragraph without a 'context'")
            for qa in paragraph.get("qas", []):
                qid = qa.get("id")
                if qid is None or not isinstance(qa.get("question"), str):
                    raise ValueError(
                        f"{source}: article {article_index}: a question lacks 'id' or 'question'"
                    )
                impossible = bool(qa.get("is_impossible", False))
                try:
                    answers = [
                        {"text": str(a["text"]), "answer_start": int(a["answer_start"])}
                        for a in ([] if impossible else qa.get("answers", []))
                    ]
                except (KeyError, TypeError, ValueError):
                    raise ValueError(
                        f"{source}: question {qid!r}: an answer lacks 'text' or 'answer_start'"
                    ) from None
                if not impossible and not answers:
                    raise ValueError(
                        f"{source}: question {qid!r} has no answers and is not marked is_impossible"
                    )
                example = {
                    "id": str(qid),
                    "question": qa["question"],
                    "context": context,
                    "answers": answers,
                    "is_impossible": impossible,
                }
                examples.append(example)
    return keep_matching_answers(examples, source, strict_answers) if validate_answers else examples


def read_squad_json(
    path: str | os.PathLike,
    *,
    article_range: Sequence[int] | range | None = None,
    validate_answers: bool = True,
    strict_answers: bool = False,
) -> list[Example]:
    """Reads a SQuAD v1.1 or v2.0 JSON file; see `squad_examples` for the arguments and the example format.

    Example:
    >>> import json, tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "dev.json"
    >>> _ = path.write_text(json.dumps({"data": [{"paragraphs": [{"context": "in Paris", "qas": [
    ...     {"id": "q", "question": "Where?", "answers": [], "is_impossible": True}]}]}]}))
    >>> read_squad_json(path)[0]["is_impossible"]
    True
    """
    path = os.fspath(path)
    with file_io.text_stream(path) as handle:
        try:
            data = json.load(handle)
        except json.JSONDecodeError as error:
            raise ValueError(f"{path}:{error.lineno}: invalid JSON ({error.msg})") from None
    return squad_examples(data, source=path, article_range=article_range, validate_answers=validate_answers,
                          strict_answers=strict_answers)
