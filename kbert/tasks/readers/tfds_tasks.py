"""Task examples from TensorFlow Datasets: GLUE, IMDB reviews, CoNLL-2003 and SQuAD v1.1 / v2.0.

The readers load a prepared tfds dataset and turn it into the same plain example dicts as the local-file
readers, mapping each dataset's feature names (e.g. GLUE's `premise` / `hypothesis`) and its ClassLabel
names. `tensorflow_datasets` is imported on first use only.

Sequence features of one example are expected to have equal lengths (CoNLL `tokens` vs `ner`, SQuAD
`answers/text` vs `answers/answer_start`). Real data always does; the random data of
`tfds.testing.mock_data` does not, so `on_length_mismatch` chooses: "truncate" (default: cut to the
shorter and warn once per read with the count), "skip" (drop the example, warn) or "raise".
"""

from __future__ import annotations

import warnings
from typing import Any, Iterator

from kbert.tasks.example import Example
from kbert.tasks.readers.conll import CONLL_COLUMNS
from kbert.tasks.readers.squad_json import keep_matching_answers

# Default (text, text_pair) features per dataset; the label feature is "label" for all of them.
CLASSIFICATION_COLUMNS: dict[str, tuple[str, str | None]] = {
    "glue/cola": ("sentence", None),
    "glue/sst2": ("sentence", None),
    "glue/mrpc": ("sentence1", "sentence2"),
    "glue/qqp": ("question1", "question2"),
    "glue/stsb": ("sentence1", "sentence2"),
    "glue/mnli": ("premise", "hypothesis"),
    "glue/mnli_matched": ("premise", "hypothesis"),
    "glue/mnli_mismatched": ("premise", "hypothesis"),
    "glue/qnli": ("question", "sentence"),
    "glue/rte": ("sentence1", "sentence2"),
    "glue/wnli": ("sentence1", "sentence2"),
    "glue/ax": ("premise", "hypothesis"),
    "imdb_reviews": ("text", None),
    "imdb_reviews/plain_text": ("text", None),
}
_LENGTH_POLICIES = ("truncate", "skip", "raise")


def _base_name(name: str) -> str:
    """"glue/sst2:2.0.0" -> "glue/sst2"."""
    return name.split(":", 1)[0]


def _load(name: str, split: str, data_dir: str | None, download: bool) -> tuple[Iterator[dict], Any]:
    import tensorflow_datasets as tfds

    dataset, info = tfds.load(name, split=split, data_dir=data_dir, download=download, with_info=True)
    return iter(tfds.as_numpy(dataset)), info


def _text(value: Any) -> str:
    return value.decode("utf-8") if isinstance(value, bytes) else str(value)


def _class_names(feature: Any) -> list[str] | None:
    names = getattr(feature, "names", None)
    return list(names) if names else None


def tfds_label_names(name: str, column: str = "label", *, data_dir: str | None = None) -> list[str] | None:
    """A tfds dataset's class names for a ClassLabel feature (or a sequence of them), in id order.

    Use them as the label vocabulary to keep the dataset's own ids (e.g. GLUE `1` = positive / duplicate).

    Args:
        name: str. tfds name, e.g. "glue/qqp" or "conll2003".
        column: str. Feature name ("label", or "ner" / "pos" / "chunks" for conll2003).
        data_dir: optional tfds data directory.

    Returns:
        list of str, or None when the feature is not a ClassLabel (e.g. STS-B's float score).

    Example:
    >>> tfds_label_names("glue/sst2")  # doctest: +SKIP
    ['negative', 'positive']
    """
    import tensorflow_datasets as tfds

    features = tfds.builder(name, data_dir=data_dir).info.features
    if column not in features:
        raise ValueError(f"tfds {name} has no feature {column!r}; it has {sorted(features)}")
    feature = features[column]
    return _class_names(getattr(feature, "feature", feature))


def read_tfds_classification(
    name: str,
    split: str = "train",
    *,
    text_column: str | None = None,
    text_pair_column: str | None = None,
    label_column: str | None = "label",
    data_dir: str | None = None,
    download: bool = True,
) -> list[Example]:
    """Reads a tfds text-classification dataset (every `glue/*` config, `imdb_reviews`, or any other with
    named text features).

    Args:
        name: str. tfds name, e.g. "glue/mnli".
        split: str. tfds split, e.g. "validation_matched" or "train[:1000]".
        text_column: optional str. Text feature; None takes the dataset's default (see
            `CLASSIFICATION_COLUMNS`), required for datasets not listed there.
        text_pair_column: optional str. Second text feature; None takes the dataset's default.
        label_column: optional str. Label feature ("label"); None reads no labels.
        data_dir: optional tfds data directory.
        download: bool. Let tfds download and prepare the dataset if it is absent.

    Returns:
        list of {"text", "text_pair", "label"}: ClassLabel labels as their names ("positive"), float
        labels (STS-B) as floats, label -1 (GLUE test splits have no labels) as None.

    Example:
    >>> read_tfds_classification("glue/mrpc", "validation")[0].keys()  # doctest: +SKIP
    dict_keys(['text', 'text_pair', 'label'])
    """
    default_text, default_pair = CLASSIFICATION_COLUMNS.get(_base_name(name), (None, None))
    text_column = text_column or default_text
    text_pair_column = text_pair_column or default_pair
    if text_column is None:
        raise ValueError(f"tfds {name}: no default text feature is known; pass text_column=")
    rows, info = _load(name, split, data_dir, download)
    features = info.features
    for column in (text_column, text_pair_column, label_column):
        if column is not None and column not in features:
            raise ValueError(f"tfds {name} has no feature {column!r}; it has {sorted(features)}")
    names = _class_names(features[label_column]) if label_column else None
    examples: list[Example] = []
    for row in rows:
        label: str | float | None = None
        if label_column is not None:
            value = row[label_column]
            if names is not None:
                label = names[int(value)] if int(value) >= 0 else None
            elif getattr(value, "dtype", None) is not None and value.dtype.kind == "f":
                label = float(value)
            else:
                label = _text(value)
        examples.append(
            {
                "text": _text(row[text_column]),
                "text_pair": _text(row[text_pair_column]) if text_pair_column else None,
                "label": label,
            }
        )
    return examples


class _LengthCheck:
    """Applies `on_length_mismatch` and reports the count once, at the end of a read."""

    def __init__(self, policy: str, what: str) -> None:
        if policy not in _LENGTH_POLICIES:
            raise ValueError(f"on_length_mismatch must be one of {_LENGTH_POLICIES}, got {policy!r}")
        self.policy, self.what, self.count = policy, what, 0

    def __call__(self, lengths: tuple[int, int], where: str) -> int | None:
        """The length to keep, or None to skip the example."""
        if lengths[0] == lengths[1]:
            return lengths[0]
        if self.policy == "raise":
            raise ValueError(f"{where}: {self.what} have different lengths {lengths}")
        self.count += 1
        return min(lengths) if self.policy == "truncate" else None

    def report(self, name: str) -> None:
        if self.count:
            action = "truncated to the shorter" if self.policy == "truncate" else "skipped"
            warnings.warn(
                f"tfds {name}: {self.count} example(s) whose {self.what} differ in length were {action}",
                stacklevel=3,
            )


def read_tfds_tagging(
    name: str = "conll2003",
    split: str = "train",
    *,
    tag_column: str | int = "ner",
    token_column: str = "tokens",
    on_length_mismatch: str = "truncate",
    data_dir: str | None = None,
    download: bool = True,
) -> list[Example]:
    """Reads a tfds token-tagging dataset (conll2003) into {"words", "tags"} examples.

    Args:
        name: str. tfds name ("conll2003").
        split: str. tfds split.
        tag_column: str or int. "ner", "pos" or "chunks" (CoNLL column indices -1, 1, 2 map to them).
        token_column: str. Feature with the words ("tokens").
        on_length_mismatch: str. "truncate", "skip" or "raise" when words and tags differ in length
            (only mock data does; see the module docstring).
        data_dir: optional tfds data directory.
        download: bool. Let tfds download and prepare the dataset if it is absent.

    Returns:
        list of {"words": list[str], "tags": list[str]}, tags as the ClassLabel names ("B-PER").

    Example:
    >>> read_tfds_tagging("conll2003", "validation", tag_column="pos")[0].keys()  # doctest: +SKIP
    dict_keys(['words', 'tags'])
    """
    if not isinstance(tag_column, str):
        by_index = {index: feature for feature, index in CONLL_COLUMNS.items() if feature != "chunk"}
        if tag_column not in by_index:
            raise ValueError(
                f"tag_column index {tag_column} has no tfds feature; use 'ner', 'pos' or 'chunks'"
            )
        tag_column = by_index[tag_column]
    tag_column = "chunks" if tag_column == "chunk" else tag_column
    check = _LengthCheck(on_length_mismatch, f"{token_column!r} and {tag_column!r}")
    rows, info = _load(name, split, data_dir, download)
    for column in (token_column, tag_column):
        if column not in info.features:
            raise ValueError(f"tfds {name} has no feature {column!r}; it has {sorted(info.features)}")
    names = _class_names(getattr(info.features[tag_column], "feature", None))
    examples: list[Example] = []
    for index, row in enumerate(rows):
        words = [_text(w) for w in row[token_column]]
        tags = [names[int(t)] if names else _text(t) for t in row[tag_column]]
        keep = check((len(words), len(tags)), f"tfds {name}[{split}] example {index}")
        if keep is not None and keep > 0:
            examples.append({"words": words[:keep], "tags": tags[:keep]})
    check.report(name)
    return examples


def read_tfds_squad(
    name: str = "squad/v1.1",
    split: str = "train",
    *,
    validate_answers: bool = True,
    strict_answers: bool = False,
    on_length_mismatch: str = "truncate",
    data_dir: str | None = None,
    download: bool = True,
) -> list[Example]:
    """Reads tfds `squad/v1.1` or `squad/v2.0` into QA examples (the SQuAD JSON reader's format).

    Args:
        name: str. "squad/v1.1" or "squad/v2.0".
        split: str. "train" or "validation".
        validate_answers: bool. Check every answer_start against the context; answers that miss are
            skipped with a warning. Mock data has random offsets: pass False for it.
        strict_answers: bool. Raise ValueError naming the first answer that misses instead.
        on_length_mismatch: str. "truncate", "skip" or "raise" when answers/text and answers/answer_start
            differ in length (only mock data does).
        data_dir: optional tfds data directory.
        download: bool. Let tfds download and prepare the dataset if it is absent.

    Returns:
        list of {"id", "question", "context", "answers": [{"text", "answer_start"}], "is_impossible"};
        v2.0 questions marked is_impossible have no answers (their plausible answers are dropped).

    Example:
    >>> read_tfds_squad("squad/v2.0", "validation")[0]["is_impossible"]  # doctest: +SKIP
    False
    """
    check = _LengthCheck(on_length_mismatch, "answers/text and answers/answer_start")
    rows, _ = _load(name, split, data_dir, download)
    examples: list[Example] = []
    for row in rows:
        qid = _text(row["id"])
        impossible = bool(row.get("is_impossible", False))
        texts = [_text(t) for t in row["answers"]["text"]]
        starts = [int(s) for s in row["answers"]["answer_start"]]
        answers = []
        if not impossible:  # v2.0 impossible questions keep no answers, whatever the features hold
            keep = check((len(texts), len(starts)), f"tfds {name}[{split}] question {qid!r}")
            if keep is None:
                continue
            answers = [{"text": t, "answer_start": s} for t, s in zip(texts[:keep], starts[:keep])]
        example = {
            "id": qid,
            "question": _text(row["question"]),
            "context": _text(row["context"]),
            "answers": answers,
            "is_impossible": impossible,
        }
        examples.append(example)
    check.report(name)
    if validate_answers:
        examples = keep_matching_answers(examples, f"tfds {name}[{split}]", strict_answers)
    return examples
