"""Entity-level precision, recall and F1 for IOB1 / IOB2 (and IOBES) tag sequences, as conlleval / seqeval.

Entities are read with the conlleval rules that seqeval's default mode follows: a chunk starts at every
B- (or S-) tag, at an I- (or E-) tag that follows O or a tag of another type, and ends before the next
start or O. Under these rules IOB1 ("I-" opens an entity, "B-" only splits two adjacent entities of one
type) and IOB2 ("B-" opens every entity) taggings of the same entities give the same spans, so one scorer
serves both. Written here rather than depending on seqeval, which is not a kbert dependency; the tests
check it against hand-counted cases.
"""

from __future__ import annotations

from typing import Sequence

Entity = tuple[str, int, int]
_PREFIXES = ("B", "I", "E", "S")


def _split_tag(tag: str) -> tuple[str, str]:
    """"B-PER" -> ("B", "PER"); "O" -> ("O", "")."""
    if tag == "O":
        return "O", ""
    prefix, sep, entity_type = tag.partition("-")
    if not sep or prefix not in _PREFIXES or not entity_type:
        raise ValueError(f"tag {tag!r} is neither 'O' nor PREFIX-TYPE with PREFIX one of B, I, E, S")
    return prefix, entity_type


def _starts(prev_prefix: str, prev_type: str, prefix: str, entity_type: str) -> bool:
    if prefix in ("B", "S"):
        return True
    if prefix in ("I", "E") and prev_prefix in ("O", "E", "S"):
        return True
    return prefix != "O" and prev_type != entity_type


def _ends(prev_prefix: str, prev_type: str, prefix: str, entity_type: str) -> bool:
    if prev_prefix in ("E", "S"):
        return True
    if prev_prefix in ("B", "I") and prefix in ("B", "S", "O"):
        return True
    return prev_prefix != "O" and prev_type != entity_type


def extract_entities(tags: Sequence[str]) -> list[Entity]:
    """The entities of one tagged sentence.

    Args:
        tags: sequence of str. One tag per word: "O" or PREFIX-TYPE (B-, I-, E-, S-), in IOB1, IOB2 or
            IOBES.

    Returns:
        list of (type, start_word, end_word_exclusive) tuples, in order.

    Example:
    >>> extract_entities(["B-PER", "I-PER", "O", "I-LOC"])
    [('PER', 0, 2), ('LOC', 3, 4)]
    """
    entities: list[Entity] = []
    prev_prefix, prev_type, start = "O", "", -1
    for position, tag in enumerate(list(tags) + ["O"]):
        prefix, entity_type = _split_tag(tag)
        if start >= 0 and _ends(prev_prefix, prev_type, prefix, entity_type):
            entities.append((prev_type, start, position))
            start = -1
        if prefix != "O" and _starts(prev_prefix, prev_type, prefix, entity_type):
            start = position
        prev_prefix, prev_type = prefix, entity_type
    return entities


def _ratio(numerator: int, denominator: int) -> float:
    return numerator / denominator if denominator else 0.0


def _scores(correct: int, predicted: int, gold: int) -> dict[str, float]:
    precision = _ratio(correct, predicted)
    recall = _ratio(correct, gold)
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"precision": precision, "recall": recall, "f1": f1}


def entity_scores(
    true_tags: Sequence[Sequence[str]], predicted_tags: Sequence[Sequence[str]]
) -> dict[str, object]:
    """Micro-averaged entity precision / recall / F1 over a corpus, with a per-type breakdown.

    An entity counts as correct only if its type, first and last word all match (exact-span match).

    Args:
        true_tags: sequence of sentences, each a sequence of gold tags.
        predicted_tags: sequence of sentences, each a sequence of predicted tags, same lengths.

    Returns:
        dict with "precision", "recall", "f1" (fractions in [0, 1], 0 when undefined, as seqeval),
        "num_gold", "num_predicted", "num_correct", and "per_type": {type: {"precision", "recall", "f1",
        "support"}}.

    Example:
    >>> entity_scores([["B-PER", "I-PER", "O"]], [["B-PER", "O", "O"]])["f1"]
    0.0
    """
    if len(true_tags) != len(predicted_tags):
        raise ValueError(f"{len(true_tags)} gold sentences but {len(predicted_tags)} predicted")
    gold: set[tuple[int, str, int, int]] = set()
    predicted: set[tuple[int, str, int, int]] = set()
    for index, (true_sentence, predicted_sentence) in enumerate(zip(true_tags, predicted_tags)):
        if len(true_sentence) != len(predicted_sentence):
            raise ValueError(
                f"sentence {index}: {len(true_sentence)} gold tags but {len(predicted_sentence)} predicted"
            )
        gold.update((index, *entity) for entity in extract_entities(true_sentence))
        predicted.update((index, *entity) for entity in extract_entities(predicted_sentence))
    correct = gold & predicted
    result: dict[str, object] = dict(_scores(len(correct), len(predicted), len(gold)))
    result.update(num_gold=len(gold), num_predicted=len(predicted), num_correct=len(correct))
    per_type = {}
    for entity_type in sorted({e[1] for e in gold | predicted}):
        count = lambda entities: sum(1 for e in entities if e[1] == entity_type)  # noqa: E731
        scores = _scores(count(correct), count(predicted), count(gold))
        per_type[entity_type] = {**scores, "support": count(gold)}
    result["per_type"] = per_type
    return result


def entity_f1(true_tags: Sequence[Sequence[str]], predicted_tags: Sequence[Sequence[str]]) -> float:
    """Micro-averaged entity F1 (the CoNLL-2003 metric); see `entity_scores`.

    Example:
    >>> entity_f1([["B-LOC", "O"]], [["I-LOC", "O"]])
    1.0
    """
    return float(entity_scores(true_tags, predicted_tags)["f1"])
