"""Token tagging (NER, POS): a label per word, from CoNLL files, `tokens<TAB>tags` TSVs or tfds:conll2003."""

from __future__ import annotations

import dataclasses
import os
import re
from typing import Any, Callable, ClassVar, Sequence

import keras
import numpy as np
import tensorflow as tf

from kbert.metrics import entity_scores
from kbert.tasks.tagging_model import BertTokenClassifier
from kbert.tasks.base import Example, Task, TaskData
from kbert.tasks.readers.conll import CONLL_COLUMNS, iob1_to_iob2, read_conll
from kbert.tasks.readers.sources import (build_label_vocabulary, parse_source, require_file, source_label_names,
                                         split_of)
from kbert.tasks.readers.space_separated import TAG_FORMATS, detect_tag_format, read_space_separated_tags
from kbert.tasks.readers.tfds_source import LengthCheck, as_text, check_features, class_names, load_tfds
from kbert.tasks.serving import STRING, ServingInputs, lookup, named, substrings
from kbert.tasks.tagging_data import encode_tags, tagging_dataset
from kbert.tasks.soft_targets import soft_target_kl
from kbert.tasks.tagging_settings import TaggingSettings
from kbert.tasks.word_decoding import bio_entities, word_predictions, word_starts, words_from_tokens
from kbert.text import BertPreprocessor

_IOB_TAG = re.compile(r"^(O|[BIES]-.+)$")


@dataclasses.dataclass
class TaggingTask(TaggingSettings, Task):
    """A label per word; `BertTokenClassifier` predicts it on each word's first WordPiece.

    Args:
        The fields of `TaggingSettings` (its flags and `task.json` entries); and
        labels: the tag names in id order (set by `prepare` from the training data).

    Example:
    >>> TaggingTask(tag_column="pos").info()["tag_column"]
    'pos'
    """

    model_class: ClassVar[type] = BertTokenClassifier
    serving_uses_offsets: ClassVar[bool] = True  # words' spans in the text

    def _read(self, source: str | os.PathLike, split: str) -> list[Example]:
        return read_tagging(source, tag_column=self.tag_column, tag_format=self.tag_format)

    def prepare(self, source: str | os.PathLike, examples: Sequence[Example]) -> Task:
        column = self.tag_column if isinstance(self.tag_column, str) else "ner"
        labels = source_label_names(source, column) or build_label_vocabulary(t for e in examples for t in e["tags"])
        return dataclasses.replace(self, labels=labels)

    def check_labels(self, examples: Sequence[Example]) -> None:
        encode_tags(examples, self.labels or [])

    def dataset(self, examples: Sequence[Example], preprocessor: BertPreprocessor, batch_size: int,
                training: bool, seed: int = 0, group_by_length: bool = True,
                drop_remainder: bool = False) -> TaskData:
        data = tagging_dataset(examples, preprocessor, self.labels, batch_size=batch_size, shuffle=training,
                               seed=seed, with_labels=training, keep_word_ids=not training,
                               group_by_length=group_by_length, drop_remainder=drop_remainder)
        return TaskData(data, len(examples))

    def distillation_loss(self, teacher_outputs: Any, student_outputs: Any, inputs: dict[str, tf.Tensor],
                          temperature: float) -> tf.Tensor:
        """KL(teacher_T || student_T) * T^2 of each real token's tag distribution (padding left out), averaged
        over the batch's real tokens: every piece of a word, not only the first that carries its label."""
        return soft_target_kl(teacher_outputs, student_outputs, temperature, mask=inputs["padding_mask"])

    def unlabelled_examples(self, source: str | os.PathLike, limit: int | None = None) -> list[Example]:
        """Sentences read as training data is (CoNLL or `tokens<TAB>tags`); their tags, if any, are not read
        as labels. Placeholder tags: the first tag for every word."""
        placeholder = (self.labels or [None])[0]
        examples = read_tagging(source, tag_column=self.tag_column, tag_format=self.tag_format)
        return self._unlabelled([{"words": e["words"], "tags": [placeholder] * len(e["words"])} for e in examples],
                                source, limit)

    def build_model(self, encoder: keras.Model, dropout: float = 0.1, feature_based: bool = False) -> keras.Model:
        return BertTokenClassifier(encoder, len(self.labels or ()), dropout=dropout, feature_based=feature_based)

    def check_model(self, model: keras.Model) -> None:
        if model.num_labels != len(self.labels or ()):
            raise ValueError(f"A {self.name} model with {model.num_labels} outputs needs {model.num_labels} "
                             f"label names, got {self.labels}")

    def score(self, examples: Sequence[Example], batches: list[tuple[Any, dict[str, Any]]],
              extra: Any) -> dict[str, Any]:
        names = list(self.labels or ())
        default = names.index("O") if "O" in names else 0
        guess, i = [], 0
        for logits, kept in batches:
            counts = [len(e["words"]) for e in examples[i:i + len(logits)]]
            guess += [[names[t] for t in row] for row in word_predictions(logits, kept["word_ids"], counts, default)]
            i += len(logits)
        gold = [list(e["tags"]) for e in examples]
        flat_gold = [t for s in gold for t in s]
        flat_guess = [t for s in guess for t in s]
        metrics: dict[str, Any] = {"accuracy": float(np.mean([a == b for a, b in zip(flat_gold, flat_guess)]))}
        if all(_IOB_TAG.match(t) for t in flat_gold):
            scores = entity_scores(gold, guess)
            metrics.update(precision=scores["precision"], recall=scores["recall"], f1=scores["f1"],
                           per_type=scores["per_type"])
        return metrics

    # Word and entity columns are padded past each row's `num_words` / `num_entities`.
    trimmed_outputs: ClassVar[dict[str, tuple[str, ...]]] = {
        "num_words": ("word_start", "word_end", "word_label_id", "word_label", "word_text"),
        "num_entities": ("entity_type", "entity_start", "entity_end", "entity_text")}

    def serving_inputs(self, pair: bool = False) -> dict[str, tuple[str, ...]]:
        """One text: `preprocess(text)` and `serving_default(text)` (no pair signatures)."""
        return {"preprocess": ("text",), "serving_default": ("text",)}

    def serving_functions(self, inputs: ServingInputs, pair: bool = False) -> dict[str, Callable]:
        """tag(text) -> words (num_words, word_start, word_end, word_label_id, word_label [, word_text]) and
        entities (num_entities, entity_type, entity_start, entity_end [, entity_text]); word / entity
        columns are padded with -1 / "" past each row's count; offsets are characters, end exclusive."""
        if not self.labels:
            raise ValueError(f"a {self.name} export needs the label names")
        label_table = tf.constant(self.labels)
        begins = tf.constant([label.startswith("B-") for label in self.labels])
        type_names = sorted({label[2:] for label in self.labels if label[:2] in ("B-", "I-")})
        types = tf.constant([type_names.index(label[2:]) if label[:2] in ("B-", "I-") else -1
                             for label in self.labels], tf.int32)
        type_table = tf.constant(type_names or [""])

        @tf.function(input_signature=[STRING])
        def tag(text):
            x = inputs.pack_with_offsets(text)
            logits = inputs.run_model(x)
            in_text = tf.equal(x["text_index"], 0)
            blank = x["end_offsets"] <= x["start_offsets"]  # [CLS], [SEP], padding, white space alone ("Ġ")
            # A word-start piece of white space alone ("Ġ" before "U.S.") starts the word that follows it: the
            # label sits there, as training puts it on a word's first piece. White space that no piece of the
            # text follows (at its end) starts no word.
            followed = shifted(in_text & ~blank, -1)
            first = word_starts(x["word_ids"], in_text) & (~blank | followed)
            first &= ~shifted(first & blank, 1)
            inside = (in_text & ~blank) | first
            label_ids = tf.argmax(logits, axis=-1, output_type=tf.int32)
            w = words_from_tokens(first, inside, x["start_offsets"], x["end_offsets"], label_ids)
            e = bio_entities(w["word_value"], w["num_words"], begins, types)
            has = e["entity_type"] >= 0
            out = {
                "num_words": w["num_words"], "word_start": w["word_start"], "word_end": w["word_end"],
                "word_label_id": w["word_value"], "word_label": lookup(label_table, w["word_value"]),
                "num_entities": e["num_entities"], "entity_type": lookup(type_table, e["entity_type"]),
                "entity_start": tf.where(has, tf.gather(w["word_start"], tf.maximum(e["entity_first_word"], 0),
                                                        batch_dims=1), -1),
                "entity_end": tf.where(has, tf.gather(w["word_end"], tf.maximum(e["entity_last_word"], 0),
                                                      batch_dims=1), -1),
            }
            if inputs.with_strings:
                out["word_text"] = substrings(text, out["word_start"], out["word_end"])
                out["entity_text"] = substrings(text, out["entity_start"], out["entity_end"])
            return out

        return {"preprocess": named(inputs.pack, False), "serving_default": tag}


def shifted(mask: tf.Tensor, by: int) -> tf.Tensor:
    """A boolean `(batch, length)` mask moved `by` positions along its rows (right if positive), False shifted in.
    Padded as int32: TFLite's PAD takes booleans only from its op version 5, which older runtimes (TensorFlow
    2.18's, the last Python one with the Flex delegate) refuse."""
    padding = [[0, 0], [by, 0]] if by > 0 else [[0, 0], [0, -by]]
    moved = mask[:, :-by] if by > 0 else mask[:, -by:]
    return tf.cast(tf.pad(tf.cast(moved, tf.int32), padding), tf.bool)


def read_tagging(
    source: str | os.PathLike,
    *,
    tag_column: str | int = "ner",
    tag_format: str | None = None,
    split: str | None = None,
    to_iob2: bool = False,
    on_length_mismatch: str = "truncate",
    data_dir: str | None = None,
) -> list[Example]:
    """Reads token-tagging sentences from a CoNLL column file, a `tokens<TAB>tags` TSV (MSRA NER as Chinese
    BERT toolkits ship it) or `tfds:conll2003[:SPLIT]`.

    Args:
        source: str or PathLike. The file or tfds source.
        tag_column: str or int. CoNLL and tfds: "ner" (last column / tfds "ner"), "pos" (column 1), "chunk",
            or an index.
        tag_format: optional str. Files: "conll" (`read_conll`) or "spaces" (`read_space_separated_tags`);
            None detects it (`detect_tag_format`).
        split: optional str. tfds split when the source string has none.
        to_iob2: bool. Rewrite IOB1 entity tags as IOB2 (IOB2 input is left unchanged).
        on_length_mismatch: str. tfds only: "truncate", "skip" or "raise" when words and tags differ in
            length (only mock data does; `kbert.tasks.readers.tfds_source`).
        data_dir: optional tfds data directory.

    Returns:
        list of {"words": list[str], "tags": list[str]}; tfds tags as their ClassLabel names ("B-PER").

    Example:
    >>> import tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "train.txt"
    >>> _ = path.write_text("Paris NNP I-LOC\\nis VBZ O\\n")
    >>> read_tagging(path, to_iob2=True)
    [{'words': ['Paris', 'is'], 'tags': ['B-LOC', 'O']}]
    """
    if tag_format is not None and tag_format not in TAG_FORMATS:
        raise ValueError(f"tag_format must be one of {list(TAG_FORMATS)} or None (detect), got {tag_format!r}")
    parsed = parse_source(source)
    if parsed.kind == "tfds":
        if tag_format == "spaces":
            raise ValueError(f"tfds {parsed.name}: tag_format 'spaces' applies to TSV files")
        examples = _read_tfds(parsed.name, split_of(parsed, split), tag_column, on_length_mismatch, data_dir)
    else:
        require_file(parsed.name)
        if (tag_format or detect_tag_format(parsed.name)) == "spaces":
            examples = read_space_separated_tags(parsed.name)
        else:
            examples = read_conll(parsed.name, tag_column=tag_column)
    if to_iob2:
        examples = [{"words": e["words"], "tags": iob1_to_iob2(e["tags"])} for e in examples]
    return examples


def _read_tfds(name: str, split: str, tag_column: str | int, on_length_mismatch: str,
               data_dir: str | None = None) -> list[Example]:
    """A tfds token-tagging dataset (conll2003; words in "tokens") as `read_tagging`'s examples; CoNLL column
    indices -1, 1, 2 name the features "ner", "pos", "chunks"."""
    if not isinstance(tag_column, str):
        by_index = {index: feature for feature, index in CONLL_COLUMNS.items() if feature != "chunk"}
        if tag_column not in by_index:
            raise ValueError(f"tag_column index {tag_column} has no tfds feature; use 'ner', 'pos' or 'chunks'")
        tag_column = by_index[tag_column]
    tag_column = "chunks" if tag_column == "chunk" else tag_column
    check = LengthCheck(on_length_mismatch, f"'tokens' and {tag_column!r}")
    rows, info = load_tfds(name, split, data_dir)
    check_features(name, info.features, ("tokens", tag_column))
    names = class_names(getattr(info.features[tag_column], "feature", None))
    examples: list[Example] = []
    for index, row in enumerate(rows):
        words = [as_text(w) for w in row["tokens"]]
        tags = [names[int(t)] if names else as_text(t) for t in row[tag_column]]
        keep = check((len(words), len(tags)), f"tfds {name}[{split}] example {index}")
        if keep is not None and keep > 0:
            examples.append({"words": words[:keep], "tags": tags[:keep]})
    check.report(name)
    return examples
