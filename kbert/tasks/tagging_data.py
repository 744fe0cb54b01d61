"""Word-tagged sentences -> a batched tf.data pipeline with word labels aligned to WordPieces.

Each word is tokenized on its own (so a CoNLL word that BERT would split further, like "U.S.", stays
one unit); its label goes on its first piece and every other piece, `[CLS]`, `[SEP]` and padding get
-100, which `kbert.BertTokenClassifier`'s loss and accuracy skip (BERT paper, section 4.3).
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import tensorflow as tf

from kbert.constants import IGNORE_LABEL
from kbert.data_pipeline import (as_written, check_fixed_padding, default_pad_multiple, index_batches, pad_to_multiple,
                                 static_batch)
from kbert.tasks.example import Example
from kbert.text.bert_preprocessor import BertPreprocessor


def align_word_labels(
    preprocessor: BertPreprocessor, words: tf.RaggedTensor, tags: tf.RaggedTensor
) -> dict[str, tf.Tensor]:
    """Tokenizes words and packs them with labels on first pieces.

    Args:
        preprocessor: `kbert.BertPreprocessor` (its tokenizer, length, truncation and padding are used).
        words: string RaggedTensor (batch, words).
        tags: int RaggedTensor (batch, words) of tag ids, same shape as `words`.

    Returns:
        dict of "token_ids", "segment_ids", "padding_mask" (the model inputs), "labels" (tag id on the
        first piece of each word, -100 elsewhere) and "word_ids" (the word index on every piece of a
        word, -1 on special and padding positions), each (batch, length).

    Example:
    >>> tok = kbert.BertTokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "un", "##aff", "##able"])  # doctest: +SKIP
    >>> out = align_word_labels(kbert.BertPreprocessor(tok, 6), tf.ragged.constant([["unaffable"]]),
    ...                         tf.ragged.constant([[3]]))  # doctest: +SKIP
    >>> out["labels"].numpy().tolist()  # doctest: +SKIP
    [[-100, 3, -100, -100, -100, 0]]
    """
    tokenizer = preprocessor.tokenizer
    # Each word as it appears in the running text " ".join(words), which serving tokenizes: after the first,
    # with the space before it (byte-level BPE marks a word after a space, "Ġcat"; WordPiece drops it).
    word_in_sentence = tf.range(tf.size(words.flat_values, out_type=tf.int64)) - tf.gather(
        words.row_splits, words.value_rowids())
    spaced = tf.where(word_in_sentence > 0, tf.strings.join([" ", words.flat_values]), words.flat_values)
    pieces = tokenizer.tokenize(spaced)  # (total_words, pieces)
    pieces_per_word = pieces.row_lengths()
    piece_in_word = tf.ragged.range(pieces_per_word).flat_values
    word_of_piece = pieces.value_rowids()  # global word index of each piece
    word_tag = tf.cast(tf.gather(tags.flat_values, word_of_piece), tf.int32)
    piece_labels = tf.where(piece_in_word == 0, word_tag, IGNORE_LABEL)
    piece_word_ids = tf.cast(tf.gather(word_in_sentence, word_of_piece), tf.int32)
    # Pieces per sentence: cumulative piece counts read at the sentence boundaries.
    cum = tf.concat([[0], tf.cumsum(pieces_per_word)], 0)
    sentence_lengths = tf.gather(cum, words.row_splits[1:]) - tf.gather(cum, words.row_splits[:-1])

    def per_sentence(values):
        return tf.RaggedTensor.from_row_lengths(values, sentence_lengths)

    return preprocessor.pack(
        per_sentence(pieces.flat_values),
        aligned={"labels": [per_sentence(piece_labels)], "word_ids": [per_sentence(piece_word_ids)]},
        fill={"labels": IGNORE_LABEL, "word_ids": -1},
    )


def encode_tags(examples: Sequence[Example], label_names: Sequence[str]) -> list[list[int]]:
    """Tag ids per sentence; ValueError naming the sentence and tag when a tag is not in the vocabulary."""
    index_of = {name: i for i, name in enumerate(label_names)}
    out = []
    for index, example in enumerate(examples):
        unknown = [t for t in example["tags"] if t not in index_of]
        if unknown:
            raise ValueError(f"sentence {index}: tag {unknown[0]!r} is not one of the model's tags {list(label_names)}")
        out.append([index_of[t] for t in example["tags"]])
    return out


def tagging_dataset(
    examples: Sequence[Example],
    preprocessor: BertPreprocessor,
    label_names: Sequence[str] | None = None,
    *,
    batch_size: int = 32,
    shuffle: bool = False,
    seed: int | None = None,
    with_labels: bool = True,
    keep_word_ids: bool = False,
    pad_multiple: int | None = None,
    group_by_length: bool = True,
    drop_remainder: bool = False,
) -> tf.data.Dataset:
    """A batched `tf.data.Dataset` of `(inputs, labels)` for `BertTokenClassifier`.

    Args:
        examples: sequence of {"words": [str], "tags": [str]} (as `kbert.tasks.tagging.read_tagging` returns).
        preprocessor: `kbert.BertPreprocessor`; dynamic padding rounds up to `pad_multiple`.
        label_names: the tag vocabulary in id order (needed with `with_labels`).
        batch_size: int. Sentences per batch.
        shuffle: bool. Reshuffle every epoch.
        seed: optional int. Shuffle seed.
        with_labels: bool. Yield (inputs, labels); False yields inputs only.
        keep_word_ids: bool. Add "word_ids" to the inputs (for mapping predictions back to words).
        pad_multiple: int or None. Dynamic padding multiple (None: `default_pad_multiple()`).
        group_by_length: bool. With `shuffle`, batch sentences of similar piece counts together
            (`kbert.data_pipeline.index_batches`); False: plain random batches.
        drop_remainder: bool. Fixed shapes for a compiled step (needs `padding="fixed"`): the short last
            batch dropped, inputs and labels `(batch_size, sequence_length)` static in the `element_spec`.

    Returns:
        `tf.data.Dataset` of ({"token_ids", "segment_ids", "padding_mask"[, "word_ids"]}, labels (batch, L)).
    """
    if not examples:
        raise ValueError("no sentences")
    check_fixed_padding(preprocessor.padding, drop_remainder)
    group_by_length = group_by_length and not drop_remainder
    pad_multiple = default_pad_multiple() if pad_multiple is None else pad_multiple
    lengths = [len(e["words"]) for e in examples]
    words = tf.RaggedTensor.from_row_lengths([w for e in examples for w in e["words"]], lengths)
    if with_labels:
        ids = encode_tags(examples, label_names)
        tags = tf.RaggedTensor.from_row_lengths(np.asarray([t for s in ids for t in s], np.int32), lengths)
    else:
        tags = tf.RaggedTensor.from_row_lengths(tf.zeros([sum(lengths)], tf.int32), lengths)
    pieces = None
    if shuffle and group_by_length:  # the tokenizer runs once more, over all words, for the piece counts
        per_word = preprocessor.tokenizer.tokenize(words.flat_values).row_lengths()
        pieces = tf.reduce_sum(words.with_flat_values(per_word), axis=1).numpy()
    batches = index_batches(len(examples), batch_size, shuffle=shuffle, seed=seed, lengths=pieces,
                            drop_remainder=drop_remainder)

    @tf.autograph.experimental.do_not_convert  # no control flow on tensors: skip AutoGraph's rewrite (about 1 s)
    def pack(index):
        out = align_word_labels(preprocessor, tf.gather(words, index), tf.gather(tags, index))
        if preprocessor.padding == "dynamic":
            out = pad_to_multiple(out, pad_multiple, preprocessor.sequence_length,
                                  fill={"token_ids": preprocessor.tokenizer.pad_token_id,
                                        "labels": IGNORE_LABEL, "word_ids": -1})
        labels = out.pop("labels")
        word_ids = out.pop("word_ids")
        if keep_word_ids:
            out["word_ids"] = word_ids
        out = (out, labels) if with_labels else out
        return static_batch(out, batch_size, preprocessor.sequence_length) if drop_remainder else out

    return as_written(batches.map(pack, num_parallel_calls=tf.data.AUTOTUNE).prefetch(tf.data.AUTOTUNE))
