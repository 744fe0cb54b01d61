"""`SentencePieceTokenizer`: ALBERT's SentencePiece tokenizer as a Keras preprocessing layer of TensorFlow ops."""

from __future__ import annotations

import base64
import os

import keras
import numpy as np
import tensorflow as tf
import tensorflow_text as tf_text
from tensorflow_text.python.ops.regex_split_ops import gen_regex_split_ops

import kbert.file_io as file_io
from kbert.text.albert_normalizer import AlbertNormalizer
from kbert.text.ragged_rows import (gather_rows, ragged_from_lengths, restore_order, row_ids, splits_from_lengths,
                                    sum_by_row)
from kbert.text.sentencepiece_model import META, UNKNOWN, UNIGRAM, SentencePieceModel, charsmap_characters
from kbert.text.sentencepiece_normalization import code_point_table
from kbert.text.token_vocabulary import TokenVocabulary

# ALBERT's special pieces (HF AlbertTokenizer's defaults); [MASK] matters only to pretraining.
PAD, CLS, SEP, MASK = "<pad>", "[CLS]", "[SEP]", "[MASK]"
MODEL_FILE = "spiece.model"
# Code points that stand for NUL in the normalised text (the first that no piece holds): an unknown character.
_NUL_STAND_INS = (0xFFFF, 0xFFFE, 0x10FFFF, 0x10FFFE, 0xFDD0)


def _read_proto(proto: bytes | str | os.PathLike) -> bytes:
    if isinstance(proto, (bytes, bytearray)):
        return bytes(proto)
    path = file_io.fspath(proto)
    if file_io.isdir(path):
        path = file_io.join(path, MODEL_FILE)
    if not file_io.isfile(path):
        raise FileNotFoundError(f"SentencePiece model not found: {path}")
    return file_io.read_bytes(path)


@keras.saving.register_keras_serializable(package="kbert")
class SentencePieceTokenizer(TokenVocabulary, keras.layers.Layer):
    """ALBERT's tokenizer (normalise, split at white space, SentencePiece Unigram) inside the TF graph.

    Gives the ids, offsets and word ids of transformers' `AlbertTokenizer` as `AutoTokenizer.from_pretrained`
    builds it in transformers 5 (the `tokenizers` pipeline, "fast"): `` and '' become ", NFKD and marks
    deleted unless accents are kept, lower-casing, the model's character map, a "▁" before every word, then
    Unigram on each word. The normalisation runs on code-point tables (`kbert.text.albert_normalizer`;
    `kbert.text.sentencepiece_normalization` lists the known divergences); tensorflow-text's
    `FastSentencepieceTokenizer` runs Unigram on each distinct word of a batch (its `SentencepieceTokenizer`,
    with the same ids, where offsets are asked for), with scores rounded so that ties break as in HF
    (`SentencePieceModel.graph_proto`). The model file is held inline (config and graph constant): a
    SavedModel needs no file path.

    Offsets are HF's, except where HF's are off: after characters that the character map deletes at the
    very start of a text (HF gives "\x01the" the span (0, 3), kbert (1, 4)); and at quote pairs: the '"' of
    "``" or "''" covers both characters, where HF's covers the second only (a tagged word or an answer in
    quotes would lose its first character).

    Text like "[SEP]" is plain text, as in `BertTokenizer` (HF matches it as the special token unless
    `split_special_tokens=True`). Invalid UTF-8: each invalid sequence becomes U+FFFD (offsets count it as
    one character), which nmt_nfkc models make a space.

    Why not keras-hub's `SentencePieceTokenizer`: it has no ALBERT normalisation and no offsets, and reads
    and writes its model with `open()`.

    Args:
        proto: bytes, str or path-like. The model (`spiece.model`) as bytes, or its path or directory
            (any `tf.io.gfile` path). A Unigram model holding `<pad>`, `[CLS]` and `[SEP]`.
        lowercase: bool. HF's `do_lower_case`.
        strip_accents: bool. NFKD and delete marks (HF's `keep_accents=False`, the default).

    Call arguments:
        inputs: a string scalar, a 1-D string tensor (or Python list), or `[batch, 1]`.

    Returns:
        int32 ids without `[CLS]`/`[SEP]`: a `tf.RaggedTensor` `[batch, None]`, or 1-D for a scalar string.

    Example:
    >>> tok = SentencePieceTokenizer("albert-base-v2/spiece.model")  # doctest: +SKIP
    >>> tok(["Hello world!"]).to_list()  # doctest: +SKIP
    [[10975, 126, 187]]
    """

    # Why a TFLite export cannot hold an export that needs offsets (tagging, QA) with this tokenizer.
    tflite_offsets_unsupported = ("LiteRT's SentencePiece op (tensorflow-text's FastSentencepieceTokenize) gives "
                                  "ids without offsets, which this task's outputs need: export a SavedModel "
                                  "instead (without --tflite), or add --select-tf-ops for a file whose "
                                  "tensorflow-text ops need a Flex delegate that carries them")
    # With `--select-tf-ops` the tokenizer itself (tensorflow-text's SentencepieceOp, with offsets) goes into the
    # file as select ops; the stock Flex delegate lacks tensorflow-text's kernels (see tflite-record.md in
    # docs/investigations).
    tflite_select_ops = True
    in_tflite = False  # runs string ops that LiteRT lacks
    # Its twin that LiteRT runs ("module:class", built by `from_tokenizer`): the same ids, no offsets.
    tflite_twin = "kbert.text.tflite_sentencepiece_tokenizer:TFLiteSentencePieceTokenizer"
    # `kbert export --mediapipe` writes MediaPipe's WordPiece metadata (BertTokenizerOptions) only.
    mediapipe_unsupported = ("kbert writes MediaPipe's BERT inputs with a WordPiece vocabulary only; MediaPipe's "
                             "SentencePiece route (SentencePieceTokenizerOptions) is not written")

    def __init__(self, proto: bytes | str | os.PathLike, lowercase: bool = True, strip_accents: bool = True,
                 **kwargs):
        self._init_string_layer(**kwargs)
        self.proto = _read_proto(proto)
        model = SentencePieceModel.from_bytes(self.proto)
        if model.model_type != UNIGRAM:
            raise ValueError(f"SentencePieceTokenizer runs Unigram models (ALBERT's); this model's type is "
                             f"{model.model_type} (2 is BPE)")
        self.set_vocabulary(model.pieces)
        missing = [t for t in (PAD, CLS, SEP) if t not in self._token_to_id]
        if UNKNOWN not in model.types:
            missing.append("an unknown piece (<unk>)")
        if missing:
            raise ValueError(f"SentencePiece model lacks the piece(s) {', '.join(missing)}")
        self.lowercase = bool(lowercase)
        self.strip_accents = bool(strip_accents)
        self.pad_token_id = self._token_to_id[PAD]
        self.unk_token_id = model.types.index(UNKNOWN)
        self.cls_token_id = self._token_to_id[CLS]
        self.sep_token_id = self._token_to_id[SEP]
        self.mask_token_id = self._token_to_id.get(MASK)
        chars = set("".join(self.vocabulary))
        nul = next(c for c in _NUL_STAND_INS if chr(c) not in chars)
        table = code_point_table(charsmap_characters(model.charsmap), self.lowercase, self.strip_accents, nul)
        self._table = table
        self._normalizer = AlbertNormalizer(table, self.lowercase)
        graph_proto = model.graph_proto()
        self._sentencepiece = tf_text.SentencepieceTokenizer(model=graph_proto, out_type=tf.int32)  # has offsets
        try:  # the same ids about 2.5 times faster, and a TFLite kernel
            self._fast_sentencepiece = tf_text.FastSentencepieceTokenizer(graph_proto)
        except RuntimeError:  # its converter rejects unused pieces: the op with offsets gives those ids
            self._fast_sentencepiece = self._sentencepiece
        starts_word = np.array([p.startswith(META) for p in self.vocabulary])
        starts_word[self.unk_token_id] = False
        self._starts_word = tf.constant(starts_word)
        # A piece's bytes after its "▁" (those of the text it covers); -1: the unknown piece, whose text varies.
        content = [len(p.encode("utf-8")) - (len(META.encode("utf-8")) if s else 0)
                   for p, s in zip(self.vocabulary, starts_word)]
        content[self.unk_token_id] = -1
        self._content_bytes = tf.constant(content, tf.int32)
        self.built = True

    @property
    def tflite_unsupported(self) -> str | None:
        """Why no TFLite export can hold this tokenizer (`kbert export --tflite` refuses), or None."""
        if self._fast_sentencepiece is self._sentencepiece:
            return ("the model holds pieces with a '▁' after their first character, which tensorflow-text's "
                    "FastSentencepieceTokenizer (LiteRT's SentencePiece op) rejects: export a SavedModel instead "
                    "(without --tflite)")
        return None

    # ---- vocabulary (the look-ups are `TokenVocabulary`'s) ------------------------------------------
    def save_vocabulary(self, directory: str | os.PathLike) -> str:
        """Writes `spiece.model` and an HF `tokenizer_config.json` (`AlbertTokenizer`, `do_lower_case`,
        `keep_accents`) into `directory`; returns the spiece.model path."""
        path = file_io.join(directory, MODEL_FILE)
        file_io.write_bytes(path, self.proto)
        config = {"tokenizer_class": "AlbertTokenizer", "do_lower_case": self.lowercase,
                  "keep_accents": not self.strip_accents}
        file_io.write_json(file_io.join(directory, "tokenizer_config.json"), config)
        return path

    # ---- tokenization ----------------------------------------------------------------------------
    @staticmethod
    def _prepare(inputs) -> tuple[tf.Tensor, bool]:
        """A 1-D batch of strings, and whether the input was one string."""
        text = tf.convert_to_tensor(inputs, dtype=tf.string)
        if text.shape.rank == 2 and text.shape[-1] == 1:
            text = text[:, 0]
        elif text.shape.rank not in (None, 0, 1):
            raise ValueError(f"SentencePieceTokenizer takes a scalar or 1-D batch of strings, got shape {text.shape}")
        return tf.reshape(text, [-1]), text.shape.rank == 0

    def _word_pieces(self, words: tf.Tensor, with_offsets: bool = False) -> tuple[tf.Tensor, ...]:
        """SentencePiece on each word (HF's Unigram lattice is a word's), once per distinct word of the batch.

        Returns:
            (pieces_per_word, ids) or, with offsets, (pieces_per_word, ids, starts, ends): int32, the flat
            values in the order of `words`; starts and ends are bytes of the piece's word.
        """
        # One word at a time, not the whole text: SentencePiece sums float32 scores along what it is given,
        # and over a long text the sums lose the precision that tells segmentations apart.
        unique, index = tf.unique(words)
        if with_offsets:
            pieces, starts, ends = self._sentencepiece.tokenize_with_offsets(unique)
            values = (pieces.flat_values, tf.cast(starts.flat_values, tf.int32), tf.cast(ends.flat_values, tf.int32))
        else:
            pieces = self._fast_sentencepiece.tokenize(unique)
            values = (pieces.flat_values,)
        positions, splits = gather_rows(pieces.row_splits, index)
        return (splits[1:] - splits[:-1],) + tuple(tf.gather(v, positions) for v in values)

    def tokenize(self, inputs):
        """Token ids (no `[CLS]`/`[SEP]`); see the class docstring."""
        text, scalar = self._prepare(inputs)
        words = tf.strings.split(self._normalizer(text))
        counts, ids = self._word_pieces(words.flat_values)
        ids = ragged_from_lengths(ids, sum_by_row(counts, words.row_splits)).with_row_splits_dtype(tf.int64)
        return ids[0] if scalar else ids

    def call(self, inputs):
        return self.tokenize(inputs)

    def word_ids(self, ids: tf.RaggedTensor) -> tf.RaggedTensor:
        """The word index (0-based, within its row) of each id of `tokenize`'s ragged output.

        A word starts at each piece that begins with "▁" (and at a row's first piece), the words of HF's
        `Encoding.word_ids`: the text's white-space-separated words.
        """
        lengths = ids.row_lengths()
        first = tf.equal(tf.range(tf.size(ids.flat_values, out_type=lengths.dtype)),
                         tf.repeat(ids.row_splits[:-1], lengths))
        count = tf.cumsum(tf.cast(tf.gather(self._starts_word, ids.flat_values) | first, tf.int32))
        before_row = tf.gather(tf.concat([[0], count], 0), ids.row_splits[:-1])
        return ids.with_flat_values(count - 1 - tf.repeat(before_row, lengths))

    def tokenize_words(self, inputs):
        """Ids plus, for each piece, the index of its word in the text (0-based); see `word_ids`.

        Returns:
            (ids, word_ids): both int32, ragged `[batch, None]` (1-D for a scalar input).
        """
        ids = self.tokenize(inputs)
        if isinstance(ids, tf.RaggedTensor):
            return ids, self.word_ids(ids)
        return ids, self.word_ids(tf.RaggedTensor.from_tensor(ids[tf.newaxis]))[0]

    def tokenize_with_offsets(self, inputs):
        """Ids with each piece's start and end (exclusive) in Unicode characters of the input.

        Offsets are HF's `offset_mapping`: a piece covers the characters its text came from, without the
        white space before its word; a lone "▁" piece covers its word's first character. Characters that
        normalisation deletes belong to no piece, but for the first of a quote pair ("``" or "''"), which
        belongs to its '"' with the second.

        Returns:
            (ids, starts, ends): int32, ragged `[batch, None]` (1-D for a scalar input).
        """
        text, scalar = self._prepare(inputs)
        normalized, char_splits, char_starts, char_ends, order = self._normalizer.with_characters(text)
        words, word_starts, _, word_splits = gen_regex_split_ops.regex_split_with_offsets(normalized, "( +)", "")
        counts, flat, start, end = self._word_pieces(words, with_offsets=True)
        piece_word = row_ids(splits_from_lengths(counts), tf.int32)
        row = tf.gather(row_ids(word_splits, tf.int32), piece_word)
        row_lengths = sum_by_row(counts, word_splits)
        first_char = tf.cast(char_splits[:-1], tf.int32)
        row_byte = tf.gather(tf.concat([[0], char_ends], 0), first_char)  # each row's first byte in the batch
        base = tf.gather(row_byte, row) + tf.gather(tf.cast(word_starts, tf.int32), piece_word)
        start, end = start + base, end + base
        content = tf.gather(self._content_bytes, flat)
        content_start = tf.where(content < 0, start, end - content)
        # The first character that ends after the piece's first byte, to the last that starts before its end
        # (a lone "▁": to its word's first character's end, both characters where that is a quote pair).
        start_char = tf.searchsorted(char_ends, content_start, side="right", out_type=tf.int32)
        first_end = tf.gather(char_ends, tf.minimum(start_char, tf.maximum(tf.size(char_ends) - 1, 0)))
        last_byte = tf.where(content == 0, first_end, end) - 1
        end_char = tf.searchsorted(char_starts, last_byte, side="right", out_type=tf.int32)
        row_start = tf.gather(first_char, row)
        out = tuple((ragged_from_lengths(v, row_lengths),) for v in (flat, start_char - row_start,
                                                                     end_char - row_start))
        out = tuple(t.with_row_splits_dtype(tf.int64) for t in restore_order(out, order))
        return tuple(t[0] for t in out) if scalar else out

    def detokenize(self, ids):
        """The text of ids: pieces joined, "▁" as a space, special pieces dropped, `<unk>` as " ⁇ ".

        Lossy by nature (case, accents and spacing are normalised). Returns one string per row.
        """
        return self._sentencepiece.detokenize(ids)

    def get_config(self) -> dict:
        config = super().get_config()
        config.update({
            "proto": base64.b64encode(self.proto).decode("ascii"),
            "lowercase": self.lowercase,
            "strip_accents": self.strip_accents,
        })
        return config

    @classmethod
    def from_config(cls, config: dict):
        config = dict(config)
        if isinstance(config.get("proto"), str):  # the model as get_config writes it, not a path
            config["proto"] = base64.b64decode(config["proto"])
        return cls(**config)

    def compute_output_spec(self, inputs):
        return keras.KerasTensor([None, None], dtype="int32", ragged=True)
