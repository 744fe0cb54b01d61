"""`BertTokenizer`: BERT WordPiece tokenization as a Keras preprocessing layer of TensorFlow ops.

The character offsets of text that normalisation changes are computed in `kbert.text.wordpiece_offsets`.
"""

from __future__ import annotations

import os

import keras
import tensorflow as tf
import tensorflow_text as tf_text

import kbert.file_io as file_io
from kbert.constants import CLS, MASK, PAD, SEP, TOKENIZER_SPECIAL_TOKENS, UNK
from kbert.text import normalization
from kbert.text.ragged_rows import ragged_from_lengths, restore_order, sum_by_row, where_true
from kbert.text.token_vocabulary import TokenVocabulary
from kbert.text.wordpiece_offsets import character_offsets, long_words_as_unk


def read_vocabulary(path: str | os.PathLike) -> list[str]:
    """Reads a BERT `vocab.txt` (one token a line; the line number is the id)."""
    path = file_io.fspath(path)
    if not file_io.isfile(path):
        raise FileNotFoundError(f"vocabulary file not found: {path}")
    return [line.rstrip("\n").rstrip("\r") for line in file_io.text_stream(path)]


@keras.saving.register_keras_serializable(package="kbert")
class BertTokenizer(TokenVocabulary, keras.layers.Layer):
    """BERT's tokenizer (clean, lower-case, strip accents, split, WordPiece) inside the TF graph.

    Gives the same ids as the reference BERT tokenizer (HF `tokenizers` `BertNormalizer` +
    `BertPreTokenizer` + `WordPiece`). The normalisation is in `kbert.text.normalization` (for printable
    ASCII: just lower-casing); `tf_text.FastWordpieceTokenizer` then splits
    and runs WordPiece in one pass, except on the rare strings where its splitting could differ from
    BERT's (`normalization.needs_exact_split`), which are split by regex first. The vocabulary is held
    inline (in the config and as graph constants), so a SavedModel never depends on a vocabulary file path.

    Invalid UTF-8: each invalid byte sequence becomes U+FFFD, which BERT's cleaning deletes; offsets count
    such a sequence as one character (they index the string after that replacement).

    Args:
        vocabulary: str, path-like or list of str. a `vocab.txt` path or the tokens in id order. Must
            hold `[PAD]`, `[UNK]`, `[CLS]` and `[SEP]`; `[MASK]` is optional.
        lowercase: bool. uncased mode: lower-case (and, by default, strip accents).
        strip_accents: bool or None. NFD + drop combining marks; `None` follows `lowercase` (as BERT).
        max_chars_per_word: int. a word longer than this (in characters) becomes `[UNK]`.

    Its graph needs TF string ops that TFLite runs only with the Flex delegate; `TFLiteBertTokenizer`
    gives the same ids from ops that LiteRT runs without it.

    Call arguments:
        inputs: a string scalar, a 1-D string tensor (or Python list), or `[batch, 1]`.

    Returns:
        int32 ids without `[CLS]`/`[SEP]`: a `tf.RaggedTensor` `[batch, None]`, or a 1-D tensor for a
        scalar string.

    Example:
    >>> tok = BertTokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "the", "cat", "##s", "!"])
    >>> tok(["The cats!"]).to_list()
    [[4, 5, 6, 7]]
    """

    def __init__(
        self,
        vocabulary: str | os.PathLike | list[str],
        lowercase: bool = True,
        strip_accents: bool | None = None,
        max_chars_per_word: int = 100,
        **kwargs,
    ):
        self._init_string_layer(**kwargs)
        if isinstance(vocabulary, (str, os.PathLike)):
            vocabulary = read_vocabulary(vocabulary)
        self.set_vocabulary(vocabulary)
        missing = [t for t in TOKENIZER_SPECIAL_TOKENS if t not in self._token_to_id]
        if missing:
            raise ValueError(f"vocabulary lacks the special token(s) {', '.join(missing)}")
        self.lowercase = bool(lowercase)
        self.strip_accents = self.lowercase if strip_accents is None else bool(strip_accents)
        self.max_chars_per_word = int(max_chars_per_word)
        self.pad_token_id = self._token_to_id[PAD]
        self.unk_token_id = self._token_to_id[UNK]
        self.cls_token_id = self._token_to_id[CLS]
        self.sep_token_id = self._token_to_id[SEP]
        self.mask_token_id = self._token_to_id.get(MASK)
        # A word never exceeds 4 bytes a character, so the byte limit never fires before ours.
        self._wordpiece = tf_text.FastWordpieceTokenizer(
            vocab=self.vocabulary,
            suffix_indicator="##",
            max_bytes_per_word=4 * self.max_chars_per_word + 4,
            token_out_type=tf.int32,
            unknown_token=UNK,
            no_pretokenization=True,
        )
        # Splits (white space, punctuation, CJK) and runs WordPiece in one pass; same limit in bytes.
        self._presplit = tf_text.FastWordpieceTokenizer(
            vocab=self.vocabulary, suffix_indicator="##", max_bytes_per_word=self.max_chars_per_word,
            token_out_type=tf.int32, unknown_token=UNK, no_pretokenization=False,
        )
        self._vocab_table = tf.constant(self.vocabulary)
        # The first piece of a word is never a "##" piece and every later piece is one.
        self._is_suffix = tf.constant([t.startswith("##") for t in self.vocabulary])
        self.built = True

    in_tflite = False  # runs string ops that LiteRT lacks
    # Its twin that LiteRT runs ("module:class", built by `from_tokenizer`): the same ids and offsets.
    tflite_twin = "kbert.text.tflite_bert_tokenizer:TFLiteBertTokenizer"

    @property
    def mediapipe_unsupported(self) -> str | None:
        """Why MediaPipe's WordPiece preprocessing cannot stand in for this tokenizer, or None: it lower-cases
        every text's ASCII letters, which a cased vocabulary tells apart."""
        if not self.lowercase:
            return ("a cased vocabulary: MediaPipe's BERT preprocessing lower-cases every text "
                    "(absl::AsciiStrToLower) before its WordPiece tokenizer, so the model would see other ids")
        return None

    # ---- vocabulary (the look-ups are `TokenVocabulary`'s) ------------------------------------------
    def save_vocabulary(self, directory: str | os.PathLike) -> str:
        """Writes `vocab.txt` and `tokenizer_config.json` (`do_lower_case`) into `directory`; returns the
        vocab.txt path."""
        file_io.makedirs(directory)
        path = file_io.join(directory, "vocab.txt")
        file_io.write_text(path, "\n".join(self.vocabulary) + "\n")
        config = {"do_lower_case": self.lowercase, "strip_accents": self.strip_accents,
                  "max_chars_per_word": self.max_chars_per_word, "tokenizer_class": "BertTokenizer"}
        file_io.write_json(file_io.join(directory, "tokenizer_config.json"), config)
        return path

    # ---- tokenization ----------------------------------------------------------------------------
    def _prepare(self, inputs) -> tuple[tf.Tensor, bool]:
        text = tf.convert_to_tensor(inputs, dtype=tf.string)
        rank = text.shape.rank
        if rank == 0:
            return tf.reshape(text, [1]), True
        if rank == 2 and text.shape[-1] == 1:
            return tf.squeeze(text, -1), False
        if rank not in (None, 1):
            raise ValueError(f"BertTokenizer takes a scalar or 1-D batch of strings, got shape {text.shape}")
        return tf.reshape(text, [-1]), False

    def _split_ids(self, norm: tf.Tensor) -> tf.RaggedTensor:
        """Ids of normalised strings, split by regex then WordPiece on each word."""
        words = normalization.split_words(norm)
        words_in, _ = long_words_as_unk(words.flat_values, self.max_chars_per_word)
        pieces = self._wordpiece.tokenize(words_in)  # (total_words, None)
        return ragged_from_lengths(pieces.flat_values, sum_by_row(pieces.row_lengths(), words.row_splits))

    def _ids(self, text: tf.Tensor) -> tf.RaggedTensor:
        """Ids of a 1-D batch; rows are routed by `normalization` to the fast splitter or the regex one."""
        plain = tf.strings.regex_full_match(text, normalization.PRINTABLE_ASCII)
        plain_idx, other_idx = where_true(plain), where_true(~plain)
        plain_text = normalization.normalize_printable_ascii(tf.gather(text, plain_idx), self.lowercase)
        other = normalization.to_valid_utf8(tf.gather(text, other_idx))
        other = normalization.normalize(other, self.lowercase, self.strip_accents)
        exact = normalization.needs_exact_split(other, self.max_chars_per_word)
        fast_other, exact_other = where_true(~exact), where_true(exact)
        fast_ids = self._presplit.tokenize(tf.concat([plain_text, tf.gather(other, fast_other)], 0))
        # Most batches have no such row, and the regex split of none is a dozen ops on empty tensors: cheaper
        # than a `tf.cond` to skip them, which in a tf.data map costs about 2 ms a call (not lowered there).
        exact_ids = self._split_ids(tf.gather(other, exact_other))
        order = tf.concat([plain_idx, tf.gather(other_idx, fast_other), tf.gather(other_idx, exact_other)], 0)
        return restore_order(((fast_ids, exact_ids),), order)[0]

    def tokenize(self, inputs):
        """Token ids (no `[CLS]`/`[SEP]`); see the class docstring."""
        text, scalar = self._prepare(inputs)
        ids = self._ids(text)
        return ids[0] if scalar else ids

    def call(self, inputs):
        return self.tokenize(inputs)

    def tokenize_words(self, inputs):
        """Ids plus, for each token, the index of its word in the text (0-based).

        A word is one unit of BERT's pre-splitting: a white-space-separated run, one punctuation character
        or one CJK ideograph (as HF `Encoding.word_ids`). Use it to find the first piece of each word
        (NER) or to group pieces for whole-word masking.

        Returns:
            (ids, word_ids): both int32, ragged `[batch, None]` (1-D for a scalar input).
        """
        text, scalar = self._prepare(inputs)
        ids = self._ids(text)
        word_ids = self.word_ids(ids)
        return (ids[0], word_ids[0]) if scalar else (ids, word_ids)

    def word_ids(self, ids: tf.RaggedTensor) -> tf.RaggedTensor:
        """The word index (0-based, within its row) of each id of `tokenize`'s ragged output.

        A word starts at every piece that is not a "##" continuation, so the ids alone tell the words
        apart: `tokenize_words` without a second tokenization when the ids are at hand.
        """
        count = tf.cumsum(tf.cast(~tf.gather(self._is_suffix, ids.flat_values), tf.int32))
        before_row = tf.gather(tf.concat([[0], count], 0), ids.row_splits[:-1])
        # tf.repeat, not `row_ids`: the TFLite tokenizer inherits this, and LiteRT lacks UnsortedSegmentSum.
        return ids.with_flat_values(count - 1 - tf.repeat(before_row, ids.row_lengths()))

    def tokenize_with_offsets(self, inputs):
        """Ids with each token's start and end (exclusive) in Unicode characters of the input.

        `tf.strings.substr(text, start, end - start, unit="UTF8_CHAR")` is the token's source text
        (accents and case as in the input; a `[UNK]` spans its whole word).

        Returns:
            (ids, starts, ends): int32, ragged `[batch, None]` (1-D for a scalar input).
        """
        text, scalar = self._prepare(inputs)
        # Printable ASCII keeps its length through normalisation: the fast splitter's offsets are final.
        plain = tf.strings.regex_full_match(text, normalization.PRINTABLE_ASCII)
        plain_idx, other_idx = where_true(plain), where_true(~plain)
        plain_text = normalization.normalize_printable_ascii(tf.gather(text, plain_idx), self.lowercase)
        fast = tuple(tf.cast(t, tf.int32) for t in self._presplit.tokenize_with_offsets(plain_text))
        other = normalization.to_valid_utf8(tf.gather(text, other_idx))
        exact = character_offsets(other, self._presplit, self._wordpiece, self.lowercase, self.strip_accents,
                                  self.max_chars_per_word)
        out = restore_order(tuple(zip(fast, exact)), tf.concat([plain_idx, other_idx], 0))
        return tuple(t[0] for t in out) if scalar else out

    def detokenize(self, ids):
        """Joins token strings with spaces and glues `##` pieces back on; drops `[PAD]`.

        Lossy by nature (case, accents and spacing around punctuation are not restored).
        Returns a string tensor: one string per row (a scalar for 1-D ids).
        """
        if not isinstance(ids, tf.RaggedTensor):
            ids = tf.convert_to_tensor(ids)
        tokens = tf.gather(self._vocab_table, ids)
        tokens = tf.ragged.boolean_mask(tokens, tf.not_equal(ids, self.pad_token_id)) \
            if isinstance(ids, tf.RaggedTensor) or ids.shape.rank == 2 else \
            tf.boolean_mask(tokens, tf.not_equal(ids, self.pad_token_id))
        text = tf.strings.reduce_join(tokens, axis=-1, separator=" ")
        return tf.strings.regex_replace(text, " ##", "")

    def get_config(self) -> dict:
        config = super().get_config()
        config.update({
            "vocabulary": list(self.vocabulary),
            "lowercase": self.lowercase,
            "strip_accents": self.strip_accents,
            "max_chars_per_word": self.max_chars_per_word,
        })
        return config

    def compute_output_spec(self, inputs):
        return keras.KerasTensor([None, None], dtype="int32", ragged=True)
