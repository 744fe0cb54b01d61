"""Question-answering examples from SQuAD JSON (v1.1 and v2.0).

Each question becomes `{"id", "question", "context", "answers": [{"text", "answer_start"}],
"is_impossible"}`; `answer_start` is a character offset into `context`, checked against the answer text.
Written here because the format is a small nested JSON and tfds reads only its own prepared copies.
"""

from __future__ import annotations

import json
import os
from typing import Any, Mapping, Sequence

Example = dict[str, Any]


def check_answers(example: Mapping[str, Any], source: str = "") -> None:
    """Raises ValueError naming the question id when an answer is not at its `answer_start`.

    Args:
        example: dict. A QA example dict.
        source: str. File or dataset name for the message.

    Example:
    >>> check_answers({"id": "q", "context": "in Paris", "answers": [{"text": "Paris", "answer_start": 3}]})
    """
    context = example["context"]
    where = f"{source}: " if source else ""
    for answer in example["answers"]:
        start, text = answer["answer_start"], answer["text"]
        if not 0 <= start <= len(context) - len(text):
            raise ValueError(
                f"{where}question {example['id']!r}: answer {text!r} at answer_start {start} runs outside "
                f"the context of {len(context)} characters"
            )
        found = context[start : start + len(text)]
        if found != text:
            raise ValueError(
                f"{where}question {example['id']!r}: answer {text!r} is not at answer_start {start} "
                f"(the context has {found!r} there)"
            )


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
) -> list[Example]:
    """Flattens a parsed SQuAD JSON document into QA examples.

    Args:
        data: dict. The parsed JSON: {"version", "data": [{"title", "paragraphs": [{"context", "qas"}]}]}.
        source: str. Name used in error messages (the file path).
        article_range: optional (start, stop) or range. Keep only these articles (`data["data"][start:stop]`),
            e.g. (0, 40) and (40, 48) split the v1.1 dev file into train and evaluation parts.
        validate_answers: bool. Check that every answer_start points at its answer text.

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
                if validate_answers:
                    check_answers(example, source)
                examples.append(example)
    return examples


def read_squad_json(
    path: str | os.PathLike,
    *,
    article_range: Sequence[int] | range | None = None,
    validate_answers: bool = True,
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
    with open(path, encoding="utf-8") as handle:
        try:
            data = json.load(handle)
        except json.JSONDecodeError as error:
            raise ValueError(f"{path}:{error.lineno}: invalid JSON ({error.msg})") from None
    return squad_examples(
        data, source=path, article_range=article_range, validate_answers=validate_answers
    )
