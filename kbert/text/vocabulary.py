"""`learn_vocabulary`: a WordPiece vocabulary from text files, with BERT's own pre-splitting."""

from __future__ import annotations

import collections
import os

import keras
import tensorflow as tf
from tensorflow_text.tools.wordpiece_vocab import wordpiece_tokenizer_learner_lib as learner

from kbert.text import normalization

RESERVED_TOKENS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


def count_words(
    files: list[str | os.PathLike],
    lowercase: bool = True,
    batch_size: int = 1024,
    verbose: bool = True,
) -> collections.Counter:
    """Counts the words of text files (one text a line) after `BertTokenizer`'s normalisation/split."""
    paths = [str(f) for f in files]
    for p in paths:
        if not tf.io.gfile.exists(p):
            raise FileNotFoundError(f"vocabulary input not found: {p}")

    def split(lines):
        text = normalization.normalize(normalization.to_valid_utf8(lines), lowercase, lowercase)
        return normalization.split_words(text).flat_values

    dataset = tf.data.TextLineDataset(paths).batch(batch_size).map(split, num_parallel_calls=tf.data.AUTOTUNE)
    counts: collections.Counter = collections.Counter()
    progress = keras.utils.Progbar(None, unit_name="line") if verbose else None
    lines = 0
    for words in dataset.prefetch(2).as_numpy_iterator():
        counts.update(w.decode("utf-8") for w in words)
        lines += batch_size
        if progress is not None:
            progress.update(lines)
    return counts


def learn_vocabulary(
    files: list[str | os.PathLike],
    size: int,
    lowercase: bool = True,
    reserved_tokens: list[str] | None = None,
    max_unique_chars: int = 20000,
    min_count: int = 2,
    verbose: bool = True,
) -> list[str]:
    """Learns a BERT WordPiece vocabulary from text files.

    Words are counted after exactly the normalisation and splitting of `BertTokenizer` (so CJK
    ideographs and full-width punctuation stay single tokens of their own), then tensorflow-text's
    WordPiece learner (`wordpiece_tokenizer_learner_lib.learn`, the engine of `bert_vocab_from_dataset`)
    picks the pieces. We feed it our own word counts because `bert_vocab_from_dataset` splits with
    `tf_text.BertTokenizer`, whose NFKC case folding would turn `，` into `,`.

    Args:
        files: text files, one text a line.
        size: target vocabulary size; the learner stays within 5% below it.
        lowercase: learn an uncased vocabulary (lower-case and strip accents).
        reserved_tokens: tokens placed first; default `[PAD] [UNK] [CLS] [SEP] [MASK]` (ids 0-4).
        max_unique_chars: alphabet cap; every character seen at least `min_count` times up to this many
            is kept as a token (and as a `##` piece), so each Chinese character is in the vocabulary.
        min_count: words seen fewer times are left out of the word counts.
        verbose: show a progress bar (lines read).

    Returns:
        The tokens in id order.

    Example:
    >>> vocab = learn_vocabulary(["corpus.txt"], size=8000)  # doctest: +SKIP
    """
    if size <= len(reserved_tokens or RESERVED_TOKENS):
        raise ValueError(f"size must exceed the number of reserved tokens, got {size}")
    reserved = list(reserved_tokens or RESERVED_TOKENS)
    counts = count_words(files, lowercase=lowercase, verbose=verbose)
    if not counts:
        raise ValueError(f"no words found in {[str(f) for f in files]}")
    vocab = learner.learn(
        counts.items(),
        vocab_size=size,
        reserved_tokens=reserved,
        lower_thresh=min_count,
        max_unique_chars=max_unique_chars,
        max_input_tokens=-1,
    )
    return list(vocab)
