"""`ServingModule`: tokenizer + packer + task model + post-processing as string-in `tf.function`s."""

from __future__ import annotations

from typing import Any, Callable

import keras
import tensorflow as tf
import tensorflow_text as tf_text

from kbert.export import decoding
from kbert.text import BertPreprocessor, BertTokenizer

TASKS = ("classify", "regress", "tag", "qa", "encoder")
STRING = tf.TensorSpec([None], tf.string)


class ServingModule(tf.Module):
    """Strings in, answers out: the signatures of a kbert export.

    Written as a plain `tf.Module` rather than `keras.export.ExportArchive`: the archive saves every
    weight twice (once per Keras variable, once per captured `tf.Variable`), while this module tracks each
    weight's `tf.Variable` exactly once and captures the Keras model only in function closures. The
    vocabulary lives in the graph (tensorflow-text's WordPiece model buffer and a string constant).

    Signatures (all inputs are batched `tf.string` of any batch size, `[batch]`):
        tokenize(text) -> token_ids (batch, n) int32 padded with [PAD], num_tokens (batch,)
        preprocess(text[, text_pair]) -> token_ids, segment_ids, padding_mask (batch, length) int32
        serving_default, by task:
          classify(text[, text_pair]) -> probabilities (batch, C), label_id (batch,), label (batch,) str
          regress(text[, text_pair]) -> score (batch,)
          tag(text) -> num_words, word_start, word_end, word_label_id, word_label (+ word_text),
              num_entities, entity_type, entity_start, entity_end (+ entity_text); word/entity columns
              are padded with -1 / "" past each row's count; offsets are characters, end exclusive
          qa(question, context) -> start_char, end_char, score, no_answer_score (+ answer)
          encoder(text[, text_pair]) -> pooled_output (batch, H), mean_embedding (batch, H)
        classify/regress/encoder also get `serving_pair(text, text_pair)` when `serving_default` takes
        one text.

    Args:
        model: the Keras task model (or a `BertEncoder` for task "encoder"). Called with
            `training=False`, so dropout is off.
        tokenizer: `BertTokenizer`. For TFLite pass one built with `fast_normalizer=True`: its offsets are
            then UTF-8 bytes, not characters, and no string slicing (`word_text`, `entity_text`,
            `answer`) is in the graph, since TFLite has no kernels for it.
        task: "classify", "regress", "tag", "qa" or "encoder".
        labels: label names in id order (classify and tag).
        sequence_length: the longest packed input; shorter batches run at their own length.
        truncate: "round_robin" or "waterfall".
        pair: whether `serving_default` takes `text_pair` (classify, regress, encoder).
        max_answer_tokens: longest answer span in WordPieces (qa).

    Example:
    >>> module = ServingModule(model, tokenizer, "classify", labels=["neg", "pos"])  # doctest: +SKIP
    >>> tf.saved_model.save(module, "out", signatures=module.signatures())  # doctest: +SKIP
    """

    def __init__(self, model: keras.Model, tokenizer: BertTokenizer, task: str, labels: list[str] | None = None,
                 sequence_length: int = 128, truncate: str = "round_robin", pair: bool = False,
                 max_answer_tokens: int = 30):
        super().__init__(name="kbert_serving")
        if task not in TASKS:
            raise ValueError(f"unknown task {task!r}; expected one of {TASKS}")
        if task in ("classify", "tag") and not labels:
            raise ValueError(f"a {task} export needs the label names")
        self.task = task
        self.labels = list(labels) if labels else []
        self.pair = bool(pair) and task in ("classify", "regress", "encoder")
        self.with_strings = not tokenizer.fast_normalizer
        self.max_answer_tokens = int(max_answer_tokens)
        # Each weight's tf.Variable once (Keras variables wrap them; tracking both would save both).
        self.weights = [v.value for v in model.weights]
        run_model = _model_runner(model)
        self._fns: dict[str, Callable] = {}
        packer = BertPreprocessor(tokenizer, sequence_length=sequence_length, truncate=truncate)
        vocab = tokenizer.get_vocabulary()
        is_suffix = tf.constant([t.startswith("##") for t in vocab])
        fast = None
        if not self.with_strings:
            fast = _FastOffsets(vocab, tokenizer.lowercase, tokenizer.max_chars_per_word)
        # Traced once and shared by every signature (tracing the tokenizer dominates export time).
        token_ids = tf.function(tokenizer.tokenize, input_signature=[STRING])
        with_offsets = tf.function(fast.__call__ if fast else tokenizer.tokenize_with_offsets,
                                   input_signature=[STRING])

        def pack(*texts):
            out = packer.pack(*[token_ids(t) for t in texts])
            return _trim_to_longest({k: tf.cast(v, tf.int32) for k, v in out.items()})

        def pack_with_offsets(*texts):
            ids, starts, ends = [], [], []
            for text in texts:
                t, s, e = with_offsets(text)
                ids.append(t)
                starts.append(s)
                ends.append(e)
            out = packer.pack(*ids, aligned={"start_offsets": starts, "end_offsets": ends})
            return _trim_to_longest({k: tf.cast(v, tf.int32) for k, v in out.items()})

        @tf.function(input_signature=[STRING])
        def tokenize(text):
            ids = token_ids(text)
            return {"token_ids": ids.to_tensor(default_value=tokenizer.pad_token_id),
                    "num_tokens": tf.cast(ids.row_lengths(), tf.int32)}

        self._fns["tokenize"] = tokenize
        if task == "qa":
            self._fns["preprocess"] = tf.function(lambda question, context: pack(question, context),
                                                  input_signature=[STRING] * 2)
        else:
            self._fns["preprocess"] = _named(pack, self.pair)
        label_table = tf.constant(self.labels or [""])

        if task in ("classify", "regress", "encoder"):
            def sentence(*texts):
                x = pack(*texts)
                y = run_model(x)
                if task == "classify":
                    probabilities = tf.nn.softmax(y, axis=-1)
                    label_id = tf.argmax(y, axis=-1, output_type=tf.int32)
                    return {"probabilities": probabilities, "label_id": label_id,
                            "label": tf.gather(label_table, label_id)}
                if task == "regress":
                    return {"score": y[:, 0]}
                return {"pooled_output": y["pooled_output"],
                        "mean_embedding": decoding.masked_mean(y["sequence_output"], x["padding_mask"])}

            self._fns["serving_default"] = _named(sentence, self.pair)
            if not self.pair:
                self._fns["serving_pair"] = _named(sentence, True)
                self._fns["preprocess_pair"] = _named(pack, True)
        elif task == "tag":
            begins = tf.constant([label.startswith("B-") for label in self.labels])
            type_names = sorted({label[2:] for label in self.labels if label[:2] in ("B-", "I-")})
            types = tf.constant([type_names.index(label[2:]) if label[:2] in ("B-", "I-") else -1
                                 for label in self.labels], tf.int32)
            type_table = tf.constant(type_names or [""])

            @tf.function(input_signature=[STRING])
            def tag(text):
                x = pack_with_offsets(text)
                logits = run_model(x)
                first = decoding.word_starts(x["token_ids"], x["segment_ids"], x["padding_mask"], is_suffix)
                # Pieces of the text: [CLS], [SEP] and padding have empty offsets.
                inside = tf.equal(x["segment_ids"], 0) & (x["end_offsets"] > x["start_offsets"])
                label_ids = tf.argmax(logits, axis=-1, output_type=tf.int32)
                w = decoding.words_from_tokens(first, inside, x["start_offsets"], x["end_offsets"], label_ids)
                e = decoding.bio_entities(w["word_value"], w["num_words"], begins, types)
                first_word = tf.maximum(e["entity_first_word"], 0)
                last_word = tf.maximum(e["entity_last_word"], 0)
                has = e["entity_type"] >= 0
                out = {
                    "num_words": w["num_words"], "word_start": w["word_start"], "word_end": w["word_end"],
                    "word_label_id": w["word_value"],
                    "word_label": _lookup(label_table, w["word_value"]),
                    "num_entities": e["num_entities"],
                    "entity_type": _lookup(type_table, e["entity_type"]),
                    "entity_start": tf.where(has, tf.gather(w["word_start"], first_word, batch_dims=1), -1),
                    "entity_end": tf.where(has, tf.gather(w["word_end"], last_word, batch_dims=1), -1),
                }
                if self.with_strings:
                    out["word_text"] = _substrings(text, out["word_start"], out["word_end"])
                    out["entity_text"] = _substrings(text, out["entity_start"], out["entity_end"])
                return out

            self._fns["serving_default"] = tag
        else:
            @tf.function(input_signature=[STRING, STRING])
            def answer(question, context):
                x = pack_with_offsets(question, context)
                y = run_model(x)
                # Any context piece may start or end an answer; [SEP] and padding have empty offsets.
                allowed = (tf.equal(x["segment_ids"], 1) & tf.cast(x["padding_mask"], tf.bool)
                           & (x["end_offsets"] > x["start_offsets"]))
                span = decoding.best_spans(y["start_logits"], y["end_logits"], allowed, self.max_answer_tokens)
                found = span["start_token"] >= 0
                start_char = tf.where(found, tf.gather(x["start_offsets"], tf.maximum(span["start_token"], 0),
                                                       batch_dims=1), -1)
                end_char = tf.where(found, tf.gather(x["end_offsets"], tf.maximum(span["end_token"], 0),
                                                     batch_dims=1), -1)
                out = {"start_char": start_char, "end_char": end_char, "score": span["score"],
                       "no_answer_score": span["null_score"]}
                if self.with_strings:
                    out["answer"] = _substrings(context, start_char[:, tf.newaxis],
                                                end_char[:, tf.newaxis])[:, 0]
                return out

            self._fns["serving_default"] = answer
        for name, fn in self._fns.items():
            setattr(self, name, fn)

    def signatures(self) -> dict[str, Any]:
        """`{signature name: tf.function}` for `tf.saved_model.save(..., signatures=...)`."""
        return dict(self._fns)


class _FastOffsets:
    """FastBertNormalize + FastWordpieceTokenize with offsets mapped back to the input's UTF-8 bytes.

    Written out because `tf_text.FastBertTokenizer.tokenize_with_offsets` emits `RaggedRange`, which has
    no TFLite kernel; this maps offsets with dense gathers on the normaliser's offset map.
    """

    def __init__(self, vocab: list[str], lowercase: bool, max_chars_per_word: int):
        self.normalizer = tf_text.FastBertNormalizer(lower_case_nfd_strip_accents=lowercase)
        self.wordpiece = tf_text.FastWordpieceTokenizer(
            vocab=vocab, suffix_indicator="##", max_bytes_per_word=max_chars_per_word,
            token_out_type=tf.int32, unknown_token="[UNK]", no_pretokenization=False)

    def __call__(self, text: tf.Tensor):
        normalized, offset_map = self.normalizer.normalize_with_offsets(text)
        ids, starts, ends = self.wordpiece.tokenize_with_offsets(normalized)
        base = tf.gather(offset_map.row_splits, starts.value_rowids())
        starts = starts.with_flat_values(tf.gather(offset_map.flat_values, base + starts.flat_values))
        ends = ends.with_flat_values(tf.gather(offset_map.flat_values, base + ends.flat_values))
        return ids, starts, ends


def _named(fn: Callable, pair: bool) -> Callable:
    """`fn` as a tf.function whose inputs are named `text` (and `text_pair`): the signature's names."""
    if pair:
        return tf.function(lambda text, text_pair: fn(text, text_pair), input_signature=[STRING] * 2)
    return tf.function(lambda text: fn(text), input_signature=[STRING])


def _model_runner(model: keras.Model) -> Callable[[dict], Any]:
    """The model as one traced function shared by every signature (traced once, not per signature)."""
    spec = tf.TensorSpec([None, None], tf.int32)

    @tf.function(input_signature=[{"token_ids": spec, "segment_ids": spec, "padding_mask": spec}])
    def run(inputs):
        return model(inputs, training=False)

    def call(x):
        return run({k: x[k] for k in ("token_ids", "segment_ids", "padding_mask")})

    return call


def _trim_to_longest(x: dict[str, tf.Tensor]) -> dict[str, tf.Tensor]:
    """Drops the padding columns no row uses (at least one column stays, so batch 0 keeps its rank)."""
    used = tf.reduce_max(tf.concat([tf.reduce_sum(x["padding_mask"], axis=1), [1]], 0))
    return {k: v[:, :used] for k, v in x.items()}


def _lookup(table: tf.Tensor, ids: tf.Tensor) -> tf.Tensor:
    """Names for ids; "" where the id is -1 (padding). A gather only: TFLite has no string select."""
    padded = tf.concat([table, tf.constant([""])], 0)
    return tf.gather(padded, tf.where(ids >= 0, ids, tf.shape(table)[0]))


def _substrings(text: tf.Tensor, starts: tf.Tensor, ends: tf.Tensor) -> tf.Tensor:
    """`text[b][starts[b, k]:ends[b, k]]` in Unicode characters; "" where start is -1."""
    text = tf.strings.unicode_transcode(text, "UTF-8", "UTF-8", errors="replace", replacement_char=0xFFFD)
    wide = tf.broadcast_to(text[:, tf.newaxis], tf.shape(starts))
    pieces = tf.strings.substr(wide, tf.maximum(starts, 0), tf.maximum(ends - starts, 0), unit="UTF8_CHAR")
    return tf.where(starts >= 0, pieces, "")
