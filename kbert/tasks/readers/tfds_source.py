"""Examples from TensorFlow Datasets: the loading and the checks every task's tfds reading shares.

Each task reads its own datasets (`kbert.tasks.classification`: GLUE and IMDB reviews; `kbert.tasks.tagging`:
CoNLL-2003; `kbert.tasks.question_answering`: SQuAD v1.1 / v2.0) into the same plain example dicts as its
file readers, through `load_tfds` and the helpers here. `tensorflow_datasets` is imported on first use only.

Sequence features of one example are expected to have equal lengths (CoNLL `tokens` vs `ner`, SQuAD
`answers/text` vs `answers/answer_start`). Real data always does; the random data of
`tfds.testing.mock_data` does not, so `on_length_mismatch` chooses (`LengthCheck`): "truncate" (default: cut
to the shorter and warn once per read with the count), "skip" (drop the example, warn) or "raise".
"""

from __future__ import annotations

import warnings
from typing import Any, Iterator

_LENGTH_POLICIES = ("truncate", "skip", "raise")


def base_name(name: str) -> str:
    """"glue/sst2:2.0.0" -> "glue/sst2".

    Example:
    >>> base_name("glue/sst2:2.0.0")
    'glue/sst2'
    """
    return name.split(":", 1)[0]


def load_tfds(name: str, split: str, data_dir: str | None = None, download: bool = True) -> tuple[Iterator[dict], Any]:
    """The rows of a tfds split as numpy dicts, and the dataset's info."""
    import tensorflow_datasets as tfds

    dataset, info = tfds.load(name, split=split, data_dir=data_dir, download=download, with_info=True)
    return iter(tfds.as_numpy(dataset)), info


def as_text(value: Any) -> str:
    """A tfds string feature (bytes) as str."""
    return value.decode("utf-8") if isinstance(value, bytes) else str(value)


def class_names(feature: Any) -> list[str] | None:
    """A ClassLabel feature's names in id order; None for any other feature."""
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
    return class_names(getattr(feature, "feature", feature))


class LengthCheck:
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


def check_features(name: str, features: Any, columns: tuple[str | None, ...]) -> None:
    """ValueError naming the first of `columns` (None skipped) that the dataset lacks."""
    for column in columns:
        if column is not None and column not in features:
            raise ValueError(f"tfds {name} has no feature {column!r}; it has {sorted(features)}")
