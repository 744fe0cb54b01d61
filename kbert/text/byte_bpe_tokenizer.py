"""`ByteLevelBpeTokenizer`: RoBERTa's (GPT-2's) byte-level BPE as a Keras preprocessing layer of TF ops."""

from __future__ import annotations

import os

import keras
import tensorflow as tf

import kbert.file_io as file_io
from kbert.text import byte_level_vocab as bv
from kbert.text.byte_level_split import split_words
from kbert.text.byte_pair_merging import NO_RULE, merge_words, pack_rule
from kbert.text.normalization import to_valid_utf8
from kbert.text.ragged_rows import ragged_from_lengths, row_ids, splits_from_lengths, sum_by_row, where_true
from kbert.text.token_vocabulary import TokenVocabulary

_BLANK_BYTES = b" \t\n\x0b\x0c\r"


@keras.saving.register_keras_serializable(package="kbert")
class ByteLevelBpeTokenizer(TokenVocabulary, keras.layers.Layer):
    """RoBERTa's tokenizer (GPT-2 word splitting, then byte-pair merges on each word's bytes) in the TF graph.

    Gives the same ids as HF's `RobertaTokenizer` (fast) without special tokens, with one deliberate
    difference: special-token text such as "<s>" in the input is plain text (as `BertTokenizer` treats
    "[SEP]"), like HF with `split_special_tokens=True`. Words whose bytes are a vocabulary token that the
    rules rebuild whole are looked up; the others go through `byte_pair_merging.merge_words`. Splitting:
    `byte_level_split` (Unicode-version note there). Vocabulary and rules are held inline (config and graph
    constants), so a SavedModel never needs the files. Not keras-hub's `BytePairTokenizer`: no offsets,
    and other ids around white space (docs/investigations/byte-level-bpe.md).

    Invalid UTF-8: each invalid sequence becomes U+FFFD first (then tokenized as its 3 bytes), as HF gives
    for `text.decode("utf-8", "replace")`; offsets index the string after that replacement.

    Special ids: `cls_token_id` (`<s>`), `sep_token_id` (`</s>`), `pad_token_id` (`<pad>`), and
    `mask_token_id` / `unk_token_id` (None when absent). `packing = "roberta"` tells `BertPreprocessor`
    to lay pairs out as RoBERTa does. LiteRT cannot run this graph (regular expressions and string ops;
    the list is in docs/investigations/byte-level-bpe.md).

    Args:
        vocabulary: str, path-like, dict or list. a `vocab.json` path, `{token: id}`, or tokens in id order.
            Must hold `<s>`, `</s>`, `<pad>` and a token for each of the 256 bytes.
        merges: str, path-like or list of str. a `merges.txt` path or its rules ("left right") in rank order.
        add_prefix_space: bool. put a space before a non-empty text that does not start with one, so its
            first word is split like any other (as HF's option; needed for texts given word by word).

    Call arguments:
        inputs: a string scalar, a 1-D string tensor (or Python list), or `[batch, 1]`.

    Returns:
        int32 ids without `<s>`/`</s>`: a `tf.RaggedTensor` `[batch, None]`, or a 1-D tensor for a scalar.

    Example:
    >>> tokens = ["<s>", "<pad>", "</s>", *bv.byte_alphabet(), "Ġt", "he", "Ġthe"]
    >>> tok = ByteLevelBpeTokenizer(tokens, ["Ġ t", "h e", "Ġt he"])
    >>> ids = tok(["the the"])
    >>> ids.to_list(), tok.detokenize(ids).numpy().tolist()
    ([[119, 260, 261]], [b'the the'])
    """

    packing = "roberta"  # `<s> A </s></s> B </s>`, one segment id (see `BertPreprocessor`)
    # Why no TFLite file can hold this tokenizer (`kbert export --tflite` refuses with it).
    tflite_unsupported = ("byte-level BPE runs on regex and string ops that LiteRT has no kernels for (see "
                          "docs/investigations/byte-level-bpe.md): export a SavedModel instead (without --tflite), "
                          "or add --select-tf-ops for a file that needs the Flex delegate (TensorFlow select ops)")
    # Its ops are all TensorFlow's own, so a TFLite file can hold them as select ops (`--select-tf-ops`).
    tflite_select_ops = True
    # Why MediaPipe's text tasks cannot tokenize for it (`kbert export --mediapipe` refuses with it).
    mediapipe_unsupported = ("MediaPipe's text preprocessing tokenizes with WordPiece, SentencePiece or a regex "
                             "and has no byte-level BPE, and its BERT packing adds [CLS]/[SEP], not <s>/</s>")

    def __init__(
        self,
        vocabulary: str | os.PathLike | dict | list[str],
        merges: str | os.PathLike | list[str],
        add_prefix_space: bool = False,
        **kwargs,
    ):
        self._init_string_layer(**kwargs)
        if isinstance(vocabulary, (str, os.PathLike)):
            vocabulary = bv.read_vocab_json(vocabulary)
        elif isinstance(vocabulary, dict):
            vocabulary = bv.tokens_in_id_order(vocabulary)
        if isinstance(merges, (str, os.PathLike)):
            merges = bv.read_merges(merges)
        self.set_vocabulary(vocabulary)
        object.__setattr__(self, "merges", [str(m) for m in merges])  # untracked, as the vocabulary
        self.add_prefix_space = bool(add_prefix_space)
        missing = [t for t in (*bv.REQUIRED_SPECIAL_TOKENS, *bv.byte_alphabet()) if t not in self._token_to_id]
        if missing:
            raise ValueError(f"vocabulary lacks {len(missing)} required token(s): {', '.join(missing[:8])}")
        self.cls_token_id = self._token_to_id[bv.BOS]
        self.sep_token_id = self._token_to_id[bv.EOS]
        self.pad_token_id = self._token_to_id[bv.PAD]
        self.unk_token_id = self._token_to_id.get(bv.UNK)
        self.mask_token_id = self._token_to_id.get(bv.MASK)
        self._build_tables()
        self.built = True

    def _build_tables(self):
        table = bv.merge_table(self.vocabulary, self.merges)
        byte_ids = [self._token_to_id[c] for c in bv.byte_alphabet()]
        size = len(self.vocabulary)
        keys = [left * (size + 1) + right for left, right in table] or [-1]
        values = [pack_rule(rank, merged) for rank, merged in table.values()] or [NO_RULE]
        self._pairs = tf.lookup.StaticHashTable(tf.lookup.KeyValueTensorInitializer(
            tf.constant(keys, tf.int64), tf.constant(values, tf.int64)), NO_RULE)
        whole = bv.whole_word_tokens(self.vocabulary, table, byte_ids)
        self._whole_words = tf.lookup.StaticHashTable(tf.lookup.KeyValueTensorInitializer(
            tf.constant([w for w, _ in whole] or [b""], tf.string),
            tf.constant([i for _, i in whole] or [-1], tf.int64)), -1)
        self._byte_ids = tf.constant(byte_ids, tf.int64)
        raw = [bv.token_bytes(t) for t in self.vocabulary]
        self._token_bytes = tf.constant(raw, tf.string)
        self._token_lengths = tf.constant([len(r) for r in raw], tf.int32)
        self._leading_spaces = tf.constant([len(r) - len(r.lstrip(b" ")) for r in raw], tf.int32)
        self._trailing_spaces = tf.constant([len(r) - len(r.rstrip(b" ")) for r in raw], tf.int32)
        self._starts_blank = tf.constant([r[:1] != b"" and r[0] in _BLANK_BYTES for r in raw])
        self._ends_blank = tf.constant([r[-1:] != b"" and r[-1] in _BLANK_BYTES for r in raw])

    # ---- vocabulary (look-ups: `TokenVocabulary`) -------------------------------------------------
    def save_vocabulary(self, directory: str | os.PathLike) -> str:
        """Writes `vocab.json`, `merges.txt` and `tokenizer_config.json` into `directory`; returns the
        vocab.json path."""
        path = bv.write_vocabulary(directory, self.vocabulary, self.merges)
        config = {"tokenizer_class": "RobertaTokenizer", "add_prefix_space": self.add_prefix_space}
        file_io.write_json(file_io.join(directory, "tokenizer_config.json"), config)
        return path

    # ---- tokenization ----------------------------------------------------------------------------
    def _prepare(self, inputs) -> tuple[tf.Tensor, bool, tf.Tensor]:
        """1-D valid UTF-8 text, whether the input was a scalar, and 1 where a space was put in front."""
        text = tf.convert_to_tensor(inputs, dtype=tf.string)
        rank = text.shape.rank
        if rank == 2 and text.shape[-1] == 1:
            text = tf.squeeze(text, -1)
        elif rank not in (None, 0, 1):
            raise ValueError(f"ByteLevelBpeTokenizer takes a scalar or 1-D batch of strings, not shape {text.shape}")
        text = to_valid_utf8(tf.reshape(text, [-1]))
        added = tf.zeros(tf.shape(text), tf.int32)
        if self.add_prefix_space:
            first = tf.strings.substr(text, 0, 1)
            added = tf.cast(tf.not_equal(first, " ") & tf.not_equal(first, ""), tf.int32)  # as HF: not ""
            text = tf.where(added > 0, tf.strings.join([" ", text]), text)
        return text, rank == 0, added

    def _ids(self, text: tf.Tensor) -> tf.RaggedTensor:
        """int64 ids of a 1-D batch of valid UTF-8."""
        words = split_words(text)
        flat = words.flat_values
        found = self._whole_words.lookup(flat)
        missed = where_true(found < 0)
        pieces = tf.strings.bytes_split(tf.gather(flat, missed))
        byte_values = tf.reshape(tf.io.decode_raw(pieces.flat_values, tf.uint8), [-1])
        symbols = pieces.with_flat_values(tf.gather(self._byte_ids, tf.cast(byte_values, tf.int32)))
        merged, merged_counts = merge_words(symbols, self._pairs, sentinel=len(self.vocabulary))
        counts = tf.tensor_scatter_nd_update(tf.ones_like(found), missed[:, None], merged_counts)
        starts = tf.cumsum(counts, exclusive=True)
        # Merged ids go to their word's place in the output, after the ids of the words before it.
        merged_splits = splits_from_lengths(merged_counts)
        merged_word = row_ids(merged_splits)
        within = tf.range(tf.size(merged, out_type=tf.int64)) - tf.gather(merged_splits, merged_word)
        hits = where_true(found >= 0)
        places = tf.concat([tf.gather(starts, hits), tf.gather(tf.gather(starts, missed), merged_word) + within], 0)
        ids = tf.scatter_nd(places[:, None], tf.concat([tf.gather(found, hits), merged], 0),
                            tf.reduce_sum(counts, keepdims=True))
        return ragged_from_lengths(ids, sum_by_row(counts, words.row_splits))

    def tokenize(self, inputs):
        """Token ids (no `<s>`/`</s>`); see the class docstring."""
        text, scalar, _ = self._prepare(inputs)
        ids = tf.cast(self._ids(text), tf.int32)
        return ids[0] if scalar else ids

    def call(self, inputs):
        return self.tokenize(inputs)

    def word_ids(self, ids: tf.RaggedTensor) -> tf.RaggedTensor:
        """The word index (0-based, within its row) of each id of `tokenize`'s ragged output.

        A word starts at a row's first piece, at a piece that starts with a white-space byte (RoBERTa's
        "Ġ" for a space; also tab, newline, ...), and after a piece that ends with one. Use it to find
        the first piece of each word (tagging).
        """
        flat = tf.cast(ids.flat_values, tf.int32)
        after_blank = tf.concat([[False], tf.gather(self._ends_blank, flat)[:-1]], 0)
        row = row_ids(ids.row_splits)
        first = tf.equal(tf.range(tf.size(flat, out_type=row.dtype)), tf.gather(ids.row_splits, row))
        count = tf.cumsum(tf.cast(first | after_blank | tf.gather(self._starts_blank, flat), tf.int32))
        before_row = tf.gather(tf.concat([[0], count], 0), ids.row_splits[:-1])
        return ids.with_flat_values(count - 1 - tf.gather(before_row, row))

    def tokenize_words(self, inputs):
        """Ids plus each token's word index (see `word_ids`): (ids, word_ids), int32 ragged `[batch, None]`."""
        text, scalar, _ = self._prepare(inputs)
        ids = tf.cast(self._ids(text), tf.int32)
        words = self.word_ids(ids)
        return (ids[0], words[0]) if scalar else (ids, words)

    def tokenize_with_offsets(self, inputs):
        """Ids with each token's start and end (exclusive) in Unicode characters of the input.

        As HF's `offset_mapping` (`trim_offsets=True`): spaces at a token's start or end are left out of
        its span ("Ġworld" spans "world"; a token of spaces only is empty, at its end), and a token that
        holds part of a character's bytes spans that whole character.

        Returns:
            (ids, starts, ends): int32, ragged `[batch, None]` (1-D for a scalar input).
        """
        text, scalar, added = self._prepare(inputs)
        ids = tf.cast(self._ids(text), tf.int32)
        flat = ids.flat_values
        lengths = tf.gather(self._token_lengths, flat)
        row_bytes = tf.cumsum(tf.strings.length(text), exclusive=True)  # each row's first byte in the batch
        byte_start = tf.cumsum(lengths, exclusive=True)  # pieces tile the text: the batch's bytes in order
        chars = tf.strings.unicode_decode_with_offsets(text, "UTF-8")[1]
        # Every character's first byte in the batch, and the batch's first character of each row.
        char_bytes = tf.cast(chars.flat_values, tf.int32) + tf.gather(row_bytes, row_ids(chars.row_splits, tf.int32))
        row_chars = tf.cast(chars.row_splits[:-1], tf.int32)
        row_of = row_ids(ids.row_splits, tf.int32)
        first = tf.gather(row_chars, row_of)
        start = tf.searchsorted(char_bytes, byte_start, side="right", out_type=tf.int32) - 1 - first
        end = tf.searchsorted(char_bytes, byte_start + lengths - 1, side="right", out_type=tf.int32) - first
        lead = tf.gather(self._leading_spaces, flat)
        if self.add_prefix_space:  # as HF: a text's first token keeps one leading space (maybe the one put there)
            lead = tf.where((start == 0) & (lead == 1), 0, lead)
        start = tf.minimum(start + lead, end)
        trail = tf.gather(self._trailing_spaces, flat)
        end = tf.where(end >= trail, tf.maximum(end - trail, start), end)
        shift = tf.gather(added, row_of)
        start, end = tf.maximum(start - shift, 0), tf.maximum(end - shift, 0)
        out = (ids, ids.with_flat_values(start), ids.with_flat_values(end))
        return tuple(t[0] for t in out) if scalar else out

    def detokenize(self, ids):
        """The text of the ids: their bytes joined (`<pad>` dropped), so `detokenize(tokenize(s)) == s`
        for valid UTF-8 `s`. Returns a string tensor: one per row (a scalar for 1-D ids)."""
        if not isinstance(ids, tf.RaggedTensor):
            ids = tf.convert_to_tensor(ids)
        keep = tf.not_equal(ids, self.pad_token_id)
        if isinstance(ids, tf.RaggedTensor) or ids.shape.rank == 2:
            ids = tf.ragged.boolean_mask(ids, keep)
        else:
            ids = tf.boolean_mask(ids, keep)
        return tf.strings.reduce_join(tf.gather(self._token_bytes, ids), axis=-1)

    def get_config(self) -> dict:
        config = super().get_config()
        config.update({
            "vocabulary": list(self.vocabulary),
            "merges": list(self.merges),
            "add_prefix_space": self.add_prefix_space,
        })
        return config

    def compute_output_spec(self, inputs):
        return keras.KerasTensor([None, None], dtype="int32", ragged=True)
