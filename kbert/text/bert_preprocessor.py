"""`BertPreprocessor`: strings (or string pairs) to `token_ids`, `segment_ids`, `padding_mask`."""

from __future__ import annotations

import keras
import tensorflow as tf

from kbert.text.bert_tokenizer import BertTokenizer

TRUNCATE_MODES = ("round_robin", "waterfall")
PADDING_MODES = ("fixed", "dynamic")
# How a tokenizer's pairs are laid out, by its `packing` attribute (BERT's when it has none): separators
# between the two segments, and the second segment's segment id.
PACKING_LAYOUTS = {
    "bert": {"separators": 1, "second_segment_id": 1},  # [CLS] A [SEP] B [SEP], segment ids 0/1
    "roberta": {"separators": 2, "second_segment_id": 0},  # <s> A </s></s> B </s>, all segment id 0
}


def packing_layout(tokenizer) -> dict[str, int]:
    """How `tokenizer` lays out a pair, from its `packing` attribute (BERT's when it has none).

    Args:
        tokenizer: a kbert tokenizer.

    Returns:
        `{"separators": separators between the two texts, "second_segment_id": the second text's segment id}`.

    Example:
    >>> packing_layout(BertTokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "the"]))
    {'separators': 1, 'second_segment_id': 1}
    """
    packing = getattr(tokenizer, "packing", "bert")
    if packing not in PACKING_LAYOUTS:
        raise ValueError(f"tokenizer packing {packing!r} is not one of {sorted(PACKING_LAYOUTS)}")
    return dict(PACKING_LAYOUTS[packing])


def trim_lengths(lengths: list[tf.Tensor], budget: int, truncate: str) -> list[tf.Tensor]:
    """How many tokens each segment keeps, as tensorflow-text's trimmers decide.

    round_robin (`tf_text.RoundRobinTrimmer`): one token to each segment in turn until the budget is
    spent. waterfall (`tf_text.WaterfallTrimmer`): the first segment fills first, the next gets the rest.
    Written as dense arithmetic on lengths because the trimmers emit ragged ops that TFLite lacks.
    """
    if len(lengths) == 1 or truncate == "waterfall":
        keep, left = [], tf.fill(tf.shape(lengths[0]), budget)
        for length in lengths:
            k = tf.minimum(length, left)
            keep.append(k)
            left -= k
        return keep
    a, b = lengths
    # The first segment gets the odd token; a short second segment leaves its share to the first.
    keep_a = tf.minimum(a, tf.maximum((budget + 1) // 2, budget - b))
    return [keep_a, tf.minimum(b, budget - keep_a)]


@keras.saving.register_keras_serializable(package="kbert")
class BertPreprocessor(keras.layers.Layer):
    """Tokenizes one text or a text pair and packs `[CLS] A [SEP] B [SEP]` for the encoder.

    The tokenizer chooses the layout of a pair by its `packing` attribute (`PACKING_LAYOUTS`): BERT's, or
    RoBERTa's `<s> A </s></s> B </s>` with segment id 0 throughout (`ByteLevelBpeTokenizer`). A single
    text is `[CLS] A [SEP]` in both.

    Packing is written with dense ops (`RaggedTensor.to_tensor`, `tf.gather(batch_dims=1)`, `tf.where`)
    instead of `tf_text.combine_segments`, which lowers to `RaggedGather` that TFLite cannot run.

    Args:
        tokenizer: `BertTokenizer` or `ByteLevelBpeTokenizer`. gives the ids, the special tokens and the
            layout.
        sequence_length: int. length after packing (the maximum, with dynamic padding).
        truncate: str. "round_robin" or "waterfall" (see `trim_lengths`). round_robin is HF's default
            "longest_first" whenever the pair's token budget is even (as for any even `sequence_length`);
            with an odd budget HF gives the odd token to the longer text, round_robin to the first.
        padding: str. "fixed" pads every row to `sequence_length`; "dynamic" pads to the longest packed
            row of the batch (fewer positions to compute for short texts).

    Call arguments:
        inputs: strings (scalar or `[batch]`), or a pair `(texts, pairs)` / `[texts, pairs]` of those.

    Returns:
        dict with "token_ids" (int32), "segment_ids" (int32, 0 for `[CLS] A [SEP]`, 1 for `B [SEP]`)
        and "padding_mask" (bool, True on real tokens), each `[batch, length]` or `[length]` for scalar
        inputs.

    Example:
    >>> tok = BertTokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "the", "cat", "sat"])
    >>> out = BertPreprocessor(tok, sequence_length=6)((["the cat"], ["sat"]))
    >>> out["token_ids"].numpy().tolist(), out["segment_ids"].numpy().tolist()
    ([[2, 4, 5, 3, 6, 3]], [[0, 0, 0, 0, 1, 1]])
    """

    def __init__(
        self,
        tokenizer: BertTokenizer,
        sequence_length: int = 128,
        truncate: str = "round_robin",
        padding: str = "fixed",
        **kwargs,
    ):
        kwargs.setdefault("trainable", False)
        super().__init__(**kwargs)
        self._convert_input_args = False
        self._allow_non_tensor_positional_args = True
        if truncate not in TRUNCATE_MODES:
            raise ValueError(f"truncate must be one of {TRUNCATE_MODES}, got {truncate!r}")
        if padding not in PADDING_MODES:
            raise ValueError(f"padding must be one of {PADDING_MODES}, got {padding!r}")
        if int(sequence_length) < 3:
            raise ValueError(f"sequence_length must be >= 3 ([CLS] x [SEP]), got {sequence_length}")
        self._layout = packing_layout(tokenizer)
        self.tokenizer = tokenizer
        self.sequence_length = int(sequence_length)
        self.truncate = truncate
        self.padding = padding
        self.built = True

    @staticmethod
    def _segments(inputs) -> tuple[list, bool]:
        """Splits a call's inputs into 1 or 2 string segments; True when all are scalars."""
        if isinstance(inputs, dict):
            raise ValueError("BertPreprocessor takes strings or a (texts, pairs) tuple, not a dict")
        # A tuple is always (texts, pairs); a list is a pair only when it holds batches, not strings.
        if isinstance(inputs, tuple) or (
            isinstance(inputs, list) and inputs and not isinstance(inputs[0], (str, bytes))
        ):
            segments = list(inputs)
        else:
            segments = [inputs]
        if len(segments) not in (1, 2):
            raise ValueError(f"BertPreprocessor packs one or two segments, got {len(segments)}")
        segments = [tf.convert_to_tensor(s, dtype=tf.string) for s in segments]
        scalar = all(s.shape.rank == 0 for s in segments)
        return segments, scalar

    def call(self, inputs):
        segments, scalar = self._segments(inputs)
        ids = [self.tokenizer.tokenize(tf.reshape(s, [-1]) if s.shape.rank == 0 else s) for s in segments]
        out = self.pack(*ids)
        return {k: v[0] for k, v in out.items()} if scalar else out

    def call_with_offsets(self, inputs):
        """Like `call`, plus per position "start_offsets"/"end_offsets" and "word_ids".

        Offsets are in Unicode characters of the text the token came from (segment 0 or 1, see
        "segment_ids"), end exclusive; `[CLS]`, `[SEP]` and padding get 0/0 (like HF's
        `offset_mapping`). "word_ids" is the token's word index within its text, -1 on special and
        padding positions (first piece of a word: the position where the word id changes).
        """
        segments, scalar = self._segments(inputs)
        ids, aligned = [], {"start_offsets": [], "end_offsets": [], "word_ids": []}
        for s in segments:
            s = tf.reshape(s, [-1]) if s.shape.rank == 0 else s
            tokens, starts, ends = self.tokenizer.tokenize_with_offsets(s)
            ids.append(tokens)
            aligned["start_offsets"].append(starts)
            aligned["end_offsets"].append(ends)
            aligned["word_ids"].append(self.tokenizer.word_ids(tokens))
        out = self.pack(*ids, aligned=aligned, fill={"word_ids": -1})
        return {k: v[0] for k, v in out.items()} if scalar else out

    def pack(self, ids_a, ids_b=None, aligned: dict | None = None, fill: dict | None = None,
             max_first_length: int | None = None) -> dict:
        """Packs already-tokenized ids: `[CLS] a [SEP]` or `[CLS] a [SEP] b [SEP]`, trimmed and padded.

        Args:
            ids_a: int RaggedTensor `[batch, None]` (no special tokens).
            ids_b: optional int RaggedTensor `[batch, None]` for the second segment.
            aligned: optional `{name: [ragged_a, ragged_b]}` of values aligned with the ids (offsets,
                word ids, labels); each is trimmed and placed like its token and returned under `name`.
            fill: value of each aligned feature at special and padding positions (default 0).
            max_first_length: optional int. A pair's first segment keeps at most this many ids before the
                truncation shares out the rest (a question, cut as `build_qa_features` cuts it).

        Returns:
            dict with "token_ids", "segment_ids", "padding_mask" (and the aligned names), `[batch, L]`.
        """
        segments = [ids_a] if ids_b is None else [ids_a, ids_b]
        segments = [s if isinstance(s, tf.RaggedTensor) else tf.RaggedTensor.from_tensor(s) for s in segments]
        separators = self._layout["separators"] if ids_b is not None else 1  # between A and B
        budget = self.sequence_length - 2 - (separators if ids_b is not None else 0)
        if budget < 0:
            raise ValueError(f"sequence_length {self.sequence_length} leaves no room for a pair's special tokens")
        lengths = [tf.cast(s.row_lengths(), tf.int32) for s in segments]
        if max_first_length is not None:
            if ids_b is None or max_first_length < 0:
                raise ValueError(f"max_first_length ({max_first_length}) cuts the first segment of a pair: "
                                 "give two segments and a length >= 0")
            lengths[0] = tf.minimum(lengths[0], max_first_length)
        keep = trim_lengths(lengths, budget, self.truncate)
        total = sum(keep) + self.sequence_length - budget  # (batch,): the ids plus the special tokens
        length = self.sequence_length if self.padding == "fixed" else tf.reduce_max(total)
        batch = tf.shape(lengths[0])[0]
        positions = tf.range(length)[tf.newaxis, :]  # (1, length), broadcast against (batch, 1)

        tok = self.tokenizer
        aligned = aligned or {}
        fill = fill or {}
        segment_ids = tf.zeros([batch, length], tf.int32)
        if len(segments) == 1:
            token_ids, extra = self._place_one(segments[0], aligned, fill, total, positions, length, budget)
        else:
            token_ids = tf.fill([batch, length], tf.constant(tok.pad_token_id, tf.int32))
            extra = {name: tf.fill([batch, length], tf.constant(fill.get(name, 0), tf.int32)) for name in aligned}
            token_ids = tf.where(positions == 0, tok.cls_token_id, token_ids)
            start = tf.ones([batch, 1], tf.int32)
            for i, (segment, k) in enumerate(zip(segments, keep)):
                end = start + k[:, tf.newaxis]
                inside = (positions >= start) & (positions < end)
                if i > 0:
                    index = tf.clip_by_value(positions - start, 0, budget - 1)

                def place(values, current):
                    dense = tf.cast(values, tf.int32).to_tensor(shape=[None, budget])
                    if i == 0:  # every row's first segment starts at position 1: a shift, not a gather
                        moved = tf.pad(dense, [[0, 0], [1, self.sequence_length - 1 - budget]])[:, :length]
                    else:
                        moved = tf.gather(dense, index, batch_dims=1)
                    return tf.where(inside, moved, current)

                token_ids = place(segment, token_ids)
                for name, values in aligned.items():
                    extra[name] = place(values[i], extra[name])
                gap = separators if i == 0 else 1
                sep = (positions >= end) & (positions < end + gap)
                token_ids = tf.where(sep, tok.sep_token_id, token_ids)
                segment_ids = tf.where(inside | sep, i * self._layout["second_segment_id"], segment_ids)
                start = end + gap
        out = {
            "token_ids": token_ids,
            "segment_ids": segment_ids,
            "padding_mask": tf.broadcast_to(positions < total[:, tf.newaxis], [batch, length]),
        }
        out.update(extra)
        return out

    def _place_one(self, ids, aligned: dict, fill: dict, total, positions, length, budget: int) -> tuple:
        """`[CLS] a [SEP]` laid out as columns: no per-position gather, about half the ops of a pair."""
        tok = self.tokenizer

        def columns(values, first: int, value: int):
            """`first`, then `values` truncated to the budget and padded with `value`, cut to `length`."""
            dense = tf.cast(values, tf.int32).to_tensor(default_value=value, shape=[None, budget])
            edges = [tf.fill([tf.shape(dense)[0], 1], tf.constant(v, tf.int32)) for v in (first, value)]
            return tf.concat([edges[0], dense, edges[1]], 1)[:, :length]

        sep = positions == (total - 1)[:, tf.newaxis]
        token_ids = tf.where(sep, tok.sep_token_id, columns(ids, tok.cls_token_id, tok.pad_token_id))
        extra = {name: columns(values[0], fill.get(name, 0), fill.get(name, 0)) for name, values in aligned.items()}
        return token_ids, extra

    def get_config(self) -> dict:
        config = super().get_config()
        config.update({
            "tokenizer": keras.saving.serialize_keras_object(self.tokenizer),
            "sequence_length": self.sequence_length,
            "truncate": self.truncate,
            "padding": self.padding,
        })
        return config

    @classmethod
    def from_config(cls, config: dict):
        config = dict(config)
        if isinstance(config.get("tokenizer"), dict):
            config["tokenizer"] = keras.saving.deserialize_keras_object(config["tokenizer"])
        return cls(**config)
