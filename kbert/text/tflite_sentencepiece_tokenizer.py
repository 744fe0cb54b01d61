"""`TFLiteSentencePieceTokenizer`: `SentencePieceTokenizer`'s ids from one op that LiteRT runs without Flex."""

from __future__ import annotations

import keras
import tensorflow as tf
import tensorflow_text as tf_text

from kbert.text.sentencepiece_model import SentencePieceModel
from kbert.text.sentencepiece_tokenizer import SentencePieceTokenizer
from kbert.text.sentencepiece_vocabulary import compile_charsmap

# Step 1 of ALBERT's normalisation (`kbert.text.sentencepiece_normalization`): the only rules on more than one
# character.
QUOTE_PAIRS = {"``": '"', "''": '"'}


def normalization_rules(table) -> dict[str, str]:
    """ALBERT's whole normalisation as replacement rules: each code point that `code_point_table` changes, and
    the two quote pairs. NUL is left out (no SentencePiece rule can hold it; the op reads it as an unknown
    character, as the table's stand-in makes it)."""
    keys, splits, values = table
    rules = {chr(key): "".join(map(chr, values[start:end].tolist()))
             for key, start, end in zip(keys.tolist(), splits[:-1].tolist(), splits[1:].tolist()) if key}
    return {**rules, **QUOTE_PAIRS}


@keras.saving.register_keras_serializable(package="kbert")
class TFLiteSentencePieceTokenizer(SentencePieceTokenizer):
    """`SentencePieceTokenizer` with the same ids, from one op with a TFLite kernel (LiteRT, no Flex delegate).

    ALBERT's normalisation changes one code point at a time, except for the quote pairs "``" and "''"
    (`kbert.text.sentencepiece_normalization`). So all of it fits a SentencePiece character map, the
    longest-match replacement rules a model file holds: every code point that the normalisation tables change
    (the model's own map already folded in), and the two pairs, compiled by the sentencepiece library
    (`compile_charsmap`) into a copy of the graph's model. tensorflow-text's `FastSentencepieceTokenizer`
    then normalises, puts "▁" before each word and runs Unigram on the raw text in one op,
    `FastSentencepieceTokenize` in `tensorflow_text.tflite_registrar.SELECT_TFTEXT_OPS`.

    The same ids on any valid UTF-8 text. Invalid UTF-8: the op reads each invalid sequence as an unknown
    character (`<unk>`), where `SentencePieceTokenizer` reads U+FFFD, which ALBERT's character map makes a
    space. Ids only: the op gives no offsets, so `tokenize_with_offsets` (tagging and QA exports) raises; their
    exports stay SavedModels (`tflite_offsets_unsupported`). Why not tensorflow-text's `WhitespaceTokenizer`
    for HF's word split first: its TFLite kernel splits inside multi-byte characters (U+00A0, U+3000); one
    op on the whole text gives HF's ids, since no piece holds a "▁" after its first character.

    Args:
        proto, lowercase, strip_accents: as `SentencePieceTokenizer`.

    Example:
    >>> lite = TFLiteSentencePieceTokenizer.from_tokenizer(load_tokenizer("albert-base-v2"))  # doctest: +SKIP
    >>> lite(["Hello world!"]).to_list()  # doctest: +SKIP
    [[10975, 126, 187]]
    """

    in_tflite = True

    def __init__(self, proto, lowercase: bool = True, strip_accents: bool = True, **kwargs):
        super().__init__(proto, lowercase=lowercase, strip_accents=strip_accents, **kwargs)
        if self.tflite_unsupported:
            raise ValueError(f"no TFLite SentencePiece tokenizer for this model: {self.tflite_unsupported}")
        charsmap = compile_charsmap(normalization_rules(self._table))
        self._lite = tf_text.FastSentencepieceTokenizer(SentencePieceModel.from_bytes(self.proto).graph_proto(charsmap))

    @classmethod
    def from_tokenizer(cls, tokenizer: SentencePieceTokenizer) -> "TFLiteSentencePieceTokenizer":
        """The TFLite tokenizer with `tokenizer`'s model and settings."""
        return cls(tokenizer.proto, lowercase=tokenizer.lowercase, strip_accents=tokenizer.strip_accents)

    def tokenize(self, inputs):
        """Token ids (no `[CLS]`/`[SEP]`), `SentencePieceTokenizer.tokenize`'s."""
        text, scalar = self._prepare(inputs)
        ids = self._lite.tokenize(text).with_row_splits_dtype(tf.int64)
        return ids[0] if scalar else ids

    def tokenize_with_offsets(self, inputs):
        raise ValueError(f"TFLiteSentencePieceTokenizer has no offsets: {self.tflite_offsets_unsupported}")
