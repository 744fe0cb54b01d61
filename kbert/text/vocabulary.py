"""`learn_vocabulary`: a WordPiece vocabulary from text files, with BERT's own pre-splitting."""

from __future__ import annotations

import collections
import os

import keras
import tensorflow as tf
from tensorflow_text.tools.wordpiece_vocab import wordpiece_tokenizer_learner_lib as learner

from kbert.constants import SPECIAL_TOKENS
from kbert.text import normalization
from kbert.text.text_files import DEFAULT_ENCODING_ERRORS, check_encoding_errors, read_lines

RESERVED_TOKENS = list(SPECIAL_TOKENS)


def count_words(
    files: list[str | os.PathLike],
    lowercase: bool = True,
    batch_size: int = 1024,
    verbose: bool = True,
    encoding_errors: str = DEFAULT_ENCODING_ERRORS,
) -> collections.Counter:
    """Counts the words of text files (one text a line) after `BertTokenizer`'s normalisation/split.

    Lines are decoded by `kbert.text.text_files.read_lines` under `encoding_errors` ("strict",
    "replace" or "ignore"); a warning names each file with repaired lines.
    """
    check_encoding_errors(encoding_errors)
    paths = [str(f) for f in files]
    for p in paths:
        if not tf.io.gfile.exists(p):
            raise FileNotFoundError(f"vocabulary input not found: {p}")

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
    def split(lines):
        text = normalization.normalize(normalization.to_valid_utf8(lines), lowercase, lowercase)
        return normalization.split_words(text).flat_values

    counts: collections.Counter = collections.Counter()
    progress = keras.utils.Progbar(None, unit_name="line") if verbose else None
    seen = 0
    batch: list[str] = []
    # Lines are decoded here, in Python, so that a strict decoding error reaches the caller as it is.
    for path in paths:
        for line in read_lines(path, encoding_errors):
            batch.append(line)
            if len(batch) == batch_size:
                counts.update(w.decode("utf-8") for w in split(tf.constant(batch)).numpy())
                seen += len(batch)
                batch = []
                if progress is not None:
                    progress.update(seen)
    if batch:
        counts.update(w.decode("utf-8") for w in split(tf.constant(batch)).numpy())
    return counts


def learn_vocabulary(
    files: list[str | os.PathLike],
    size: int,
    lowercase: bool = True,
    reserved_tokens: list[str] | None = None,
    max_unique_chars: int = 20000,
    min_count: int = 2,
    verbose: bool = True,
    encoding_errors: str = DEFAULT_ENCODING_ERRORS,
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
        encoding_errors: "strict", "replace" (default) or "ignore" for bytes that are not UTF-8.

    Returns:
        The tokens in id order.

    Example:
    >>> vocab = learn_vocabulary(["corpus.txt"], size=8000)  # doctest: +SKIP
    """
    if size <= len(reserved_tokens or RESERVED_TOKENS):
        raise ValueError(f"size must exceed the number of reserved tokens, got {size}")
    reserved = list(reserved_tokens or RESERVED_TOKENS)
    counts = count_words(files, lowercase=lowercase, verbose=verbose, encoding_errors=encoding_errors)
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
