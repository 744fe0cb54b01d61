"""What every task's serving signature is built from: strings in, packed model inputs, the model call.

`ServingInputs` traces the tokenizer once and hands each task `pack` / `pack_with_offsets` and the model
as one traced function; a task's `serving_functions` adds its own head outputs and decoding on top.
Everything is TF ops, so the same functions go into the SavedModel and (with the fast tokenizer) TFLite.
"""

from __future__ import annotations

from typing import Any, Callable

import keras
import tensorflow as tf

from kbert.text import BertPreprocessor, BertTokenizer

STRING = tf.TensorSpec([None], tf.string)
MODEL_INPUTS = ("token_ids", "segment_ids", "padding_mask")


class ServingInputs:
    """Packing and the model call shared by every signature of one export.

    Args:
        model: the Keras model, called with `training=False`.
        tokenizer: `BertTokenizer` or another kbert tokenizer. A TFLite one (`kbert.export.tflite_convert.lite_tokenizer`,
            whose `in_tflite` is True) makes the graph TFLite-convertible; then
            `with_strings` is False (TFLite has no kernel for character substrings).
        sequence_length: int. The longest packed input; shorter batches run at their own length.
        truncate: str. "round_robin" or "waterfall".

    Attributes:
        with_strings: bool. Whether signatures may slice strings (`word_text`, `answer`).
    """

    def __init__(self, model: keras.Model, tokenizer: BertTokenizer, sequence_length: int = 128,
                 truncate: str = "round_robin"):
        self.tokenizer = tokenizer
        self.with_strings = not getattr(tokenizer, "in_tflite", False)
        self.packer = BertPreprocessor(tokenizer, sequence_length=sequence_length, truncate=truncate)
        # Traced once and shared by every signature (tracing the tokenizer dominates export time).
        self.token_ids = tf.function(tokenizer.tokenize, input_signature=[STRING])
        self._with_offsets = tf.function(tokenizer.tokenize_with_offsets, input_signature=[STRING])
        spec = tf.TensorSpec([None, None], tf.int32)

        @tf.function(input_signature=[{name: spec for name in MODEL_INPUTS}])
        def run(inputs):
            # A bfloat16 model's float outputs (an encoder's embeddings) leave as float32.
            return tf.nest.map_structure(lambda t: tf.cast(t, tf.float32) if t.dtype.is_floating else t,
                                         model(inputs, training=False))

        self._run = run

    def pack(self, *texts: tf.Tensor, max_first_length: int | None = None) -> dict[str, tf.Tensor]:
        """`token_ids`, `segment_ids`, `padding_mask` (int32, trimmed to the longest row) of 1-2 segments; a
        pair's first text keeps at most `max_first_length` pieces when it is given (`BertPreprocessor.pack`)."""
        out = self.packer.pack(*[self.token_ids(t) for t in texts], max_first_length=max_first_length)
        return _trim_to_longest({k: tf.cast(v, tf.int32) for k, v in out.items()})

    def pack_with_offsets(self, *texts: tf.Tensor, max_first_length: int | None = None) -> dict[str, tf.Tensor]:
        """As `pack`, plus per position: `start_offsets` / `end_offsets` of every piece in its text (empty off
        text), `text_index` (which text the piece came from: 0 or 1, -1 on special tokens and padding, whatever
        the tokenizer's segment ids are) and `word_ids` (the piece's word in its text as the tokenizer splits
        words, its `word_ids`; -1 off text)."""
        ids, starts, ends = zip(*[self._with_offsets(text) for text in texts])
        aligned = {"start_offsets": list(starts), "end_offsets": list(ends),
                   "text_index": [tf.zeros_like(row) + i for i, row in enumerate(ids)],
                   "word_ids": [self.tokenizer.word_ids(row) for row in ids]}
        out = self.packer.pack(*ids, aligned=aligned, fill={"text_index": -1, "word_ids": -1},
                               max_first_length=max_first_length)
        return _trim_to_longest({k: tf.cast(v, tf.int32) for k, v in out.items()})

    def run_model(self, x: dict[str, tf.Tensor]) -> Any:
        """The model on packed inputs, one traced function shared by every signature."""
        return self._run({k: x[k] for k in MODEL_INPUTS})


def named(fn: Callable, pair: bool) -> Callable:
    """`fn` as a tf.function whose inputs are named `text` (and `text_pair`): the signature's names."""
    if pair:
        return tf.function(lambda text, text_pair: fn(text, text_pair), input_signature=[STRING] * 2)
    return tf.function(lambda text: fn(text), input_signature=[STRING])


def sentence_functions(inputs: ServingInputs, pair: bool,
                       head: Callable[[dict[str, tf.Tensor], Any], dict[str, tf.Tensor]]) -> dict[str, Callable]:
    """`preprocess` and `serving_default` for one text (or a pair), plus the `_pair` variants for one text.

    Args:
        inputs: the export's `ServingInputs`.
        pair: bool. `serving_default` takes `text` and `text_pair`.
        head: `(packed inputs, model outputs) -> signature outputs`.

    Returns:
        dict of signature name -> tf.function.
    """
    def answer(*texts):
        x = inputs.pack(*texts)
        return head(x, inputs.run_model(x))

    functions = {"preprocess": named(inputs.pack, pair), "serving_default": named(answer, pair)}
    if not pair:
        functions["serving_pair"] = named(answer, True)
        functions["preprocess_pair"] = named(inputs.pack, True)
    return functions


def lookup(table: tf.Tensor, ids: tf.Tensor) -> tf.Tensor:
    """Names for ids; "" where the id is -1 (padding). A gather only: TFLite has no string select."""
    padded = tf.concat([table, tf.constant([""])], 0)
    return tf.gather(padded, tf.where(ids >= 0, ids, tf.shape(table)[0]))


def substrings(text: tf.Tensor, starts: tf.Tensor, ends: tf.Tensor) -> tf.Tensor:
    """`text[b][starts[b, k]:ends[b, k]]` in Unicode characters; "" where start is -1."""
    text = tf.strings.unicode_transcode(text, "UTF-8", "UTF-8", errors="replace", replacement_char=0xFFFD)
    wide = tf.broadcast_to(text[:, tf.newaxis], tf.shape(starts))
    pieces = tf.strings.substr(wide, tf.maximum(starts, 0), tf.maximum(ends - starts, 0), unit="UTF8_CHAR")
    return tf.where(starts >= 0, pieces, "")


def _trim_to_longest(x: dict[str, tf.Tensor]) -> dict[str, tf.Tensor]:
    """Drops the padding columns no row uses (at least one column stays, so batch 0 keeps its rank)."""
    used = tf.reduce_max(tf.concat([tf.reduce_sum(x["padding_mask"], axis=1), [1]], 0))
    return {k: v[:, :used] for k, v in x.items()}
