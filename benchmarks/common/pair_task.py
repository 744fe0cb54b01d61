"""A sentence-pair task built from SQuAD v1.1: does this sentence of the article hold the answer?

Each question becomes one pair: with probability 1/2 (decided by a hash of the question id, so the set
is the same on every machine) the question and the context sentence that holds its first answer
(label "1"), otherwise the question and another sentence of the same article that holds none of its
answers (label "0"). Articles are split, not questions, so no dev question shares an article with
training. The rows are shuffled once with a fixed seed, so the first N rows of a file are a random
sample of its articles (the benchmark's training sizes take prefixes).
"""

from __future__ import annotations

import json
import os
import pathlib
import random
import re
from typing import Any, Sequence

# A sentence ends at . ! or ? followed by white space and an upper-case letter, digit, quote or bracket.
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[\"'(\[A-Z0-9])")
COLUMNS = ("question", "sentence", "label")


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) character spans of the sentences of `text`, surrounding white space excluded.

    Example:
    >>> sentence_spans("It rained. Then it stopped.")
    [(0, 10), (11, 27)]
    """
    spans, start = [], 0
    for boundary in _SENTENCE_END.finditer(text):
        spans.append((start, boundary.start()))
        start = boundary.end()
    spans.append((start, len(text.rstrip())))
    return [(a, b) for a, b in spans if text[a:b].strip()]


def _clean(text: str) -> str:
    return " ".join(text.split())  # no tabs or newlines inside a TSV field


def build_pair_examples(squad: dict[str, Any], article_range: Sequence[int], seed: int = 0) -> list[dict[str, str]]:
    """Question/sentence pairs from the articles `article_range` = (start, stop) of a SQuAD JSON dict.

    Args:
        squad: dict. The parsed SQuAD v1.1 JSON (`data[].paragraphs[].qas[]`).
        article_range: (start, stop). Articles to use, Python slice semantics.
        seed: int. Fixes which questions get a positive pair, the negatives and the row order.

    Returns:
        list of {"question": str, "sentence": str, "label": "1" | "0"}. Questions whose first answer
        crosses a sentence boundary, or whose article has no sentence free of their answers, are left out.

    Example:
    >>> squad = {"data": [{"paragraphs": [{"context": "Paris is in France. Rome is in Italy.",
    ...     "qas": [{"id": "q1", "question": "Where is Paris?",
    ...              "answers": [{"text": "France", "answer_start": 12}]}]}]}]}
    >>> [e["sentence"] for e in build_pair_examples(squad, (0, 1))] in (
    ...     ["Paris is in France."], ["Rome is in Italy."])
    True
    """
    examples: list[dict[str, str]] = []
    for article in squad["data"][article_range[0]:article_range[1]]:
        paragraphs = [(p, sentence_spans(p["context"])) for p in article["paragraphs"]]
        sentences = [p["context"][a:b] for p, spans in paragraphs for a, b in spans]
        for paragraph, spans in paragraphs:
            for qa in paragraph["qas"]:
                answer = qa["answers"][0]
                start = answer["answer_start"]
                end = start + len(answer["text"])
                holding = [(a, b) for a, b in spans if a <= start and end <= b]
                if not holding:
                    continue
                rng = random.Random(f"{seed}:{qa['id']}")
                if rng.random() < 0.5:
                    sentence, label = paragraph["context"][holding[0][0]:holding[0][1]], "1"
                else:
                    texts = {a["text"] for a in qa["answers"]}
                    others = [s for s in sentences if not any(t in s for t in texts)]
                    if not others:
                        continue
                    sentence, label = rng.choice(others), "0"
                examples.append({"question": _clean(qa["question"]), "sentence": _clean(sentence), "label": label})
    random.Random(seed).shuffle(examples)
    return examples


def article_sentences(squad: dict[str, Any], article_range: Sequence[int]) -> list[str]:
    """Every distinct sentence of the articles `article_range` = (start, stop), as `build_pair_examples` writes
    a sentence, in the order they first appear (the candidates of a retrieval over the pairs' sentences).

    Example:
    >>> squad = {"data": [{"paragraphs": [{"context": "It rained. It rained.  Then it stopped.", "qas": []}]}]}
    >>> article_sentences(squad, (0, 1))
    ['It rained.', 'Then it stopped.']
    """
    sentences = (_clean(p["context"][a:b]) for article in squad["data"][article_range[0]:article_range[1]]
                 for p in article["paragraphs"] for a, b in sentence_spans(p["context"]))
    return list(dict.fromkeys(sentences))


def write_pair_tsv(examples: Sequence[dict[str, str]], path: str | os.PathLike) -> None:
    """Writes `examples` as an unquoted TSV with the header `question  sentence  label`."""
    rows = [COLUMNS, *([e[c] for c in COLUMNS] for e in examples)]
    with open(path, "w", encoding="utf-8", newline="") as handle:
        handle.writelines("\t".join(row) + "\n" for row in rows)


PAIR_DEV_ROWS = 1000  # benchmarks.finetune_quality's --pair-dev-rows


def pair_files(squad: pathlib.Path, work: pathlib.Path) -> tuple[pathlib.Path, pathlib.Path]:
    """The pair task's training pairs (articles 0-39) and its first `PAIR_DEV_ROWS` dev pairs (articles
    40-47) as TSV files in `work`, as `benchmarks.finetune_quality` builds and scores them."""
    data = json.loads(squad.read_text(encoding="utf-8"))
    write_pair_tsv(build_pair_examples(data, (0, 40)), work / "pairs_train.tsv")
    write_pair_tsv(build_pair_examples(data, (40, 48))[:PAIR_DEV_ROWS], work / "pairs_dev.tsv")
    return work / "pairs_train.tsv", work / "pairs_dev.tsv"
