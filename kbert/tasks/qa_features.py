"""SQuAD examples -> overlapping windows of `[CLS] question [SEP] context [SEP]`, as tf.data.

Contexts longer than the window are cut into windows `doc_stride` tokens apart (Devlin et al. 2019,
section 4.2; google-research/bert `run_squad.py`). Each window keeps, per position, the character span
of its context token in the original context, so predicted spans are cut from the original text.
The tokenizer (`kbert.BertTokenizer.tokenize_with_offsets`, TF ops, run once over all texts) does the
heavy lifting; windowing is plain numpy because one example gives a data-dependent number of windows
with per-window bookkeeping that decoding needs on the host anyway.
"""

from __future__ import annotations

import dataclasses
from typing import Sequence

import numpy as np
import tensorflow as tf

from kbert.data_pipeline import as_written, default_pad_multiple, index_batches, padded_length, static_batch
from kbert.tasks.example import Example
from kbert.text.bert_preprocessor import packing_layout
from kbert.text.bert_tokenizer import BertTokenizer


@dataclasses.dataclass
class QAFeatures:
    """Windows of SQuAD examples, model inputs and the bookkeeping to decode answers.

    Attributes (arrays have one row per window, `L` = sequence_length):
        token_ids, segment_ids: int32 (windows, L).
        padding_mask: bool (windows, L).
        start_positions, end_positions: int32 (windows,); 0 (`[CLS]`) when the window misses the answer
            (or the question has none).
        example_index: int32 (windows,). The example each window came from.
        char_starts, char_ends: int32 (windows, L). Character span (end exclusive) in the example's
            context of the token at each position; -1 off the context.
        max_context: bool (windows, L). The token has its most context (min of left/right, as
            `run_squad.py`) in this window; decoding only starts answers on such tokens.
        sequence_length, doc_stride, max_query_length: the settings used.
    """

    token_ids: np.ndarray
    segment_ids: np.ndarray
    padding_mask: np.ndarray
    start_positions: np.ndarray
    end_positions: np.ndarray
    example_index: np.ndarray
    char_starts: np.ndarray
    char_ends: np.ndarray
    max_context: np.ndarray
    sequence_length: int
    doc_stride: int
    max_query_length: int

    def __len__(self) -> int:
        return len(self.token_ids)

    def inputs(self) -> dict[str, np.ndarray]:
        return {"token_ids": self.token_ids, "segment_ids": self.segment_ids, "padding_mask": self.padding_mask}

    def dataset(self, batch_size: int = 32, *, with_labels: bool = True, shuffle: bool = False,
                seed: int | None = None, group_by_length: bool = True, dynamic_padding: bool = True,
                pad_multiple: int | None = None, drop_remainder: bool = False) -> tf.data.Dataset:
        """Batched `(inputs, {"start_logits": start, "end_logits": end})` for `BertQuestionAnswerer`.

        With `dynamic_padding` each batch is cut to its longest window, rounded up to `pad_multiple`
        (None: `default_pad_multiple()`); with `shuffle` and `group_by_length`, windows of similar lengths
        are batched together (`kbert.data_pipeline.index_batches`). `drop_remainder` (without
        `dynamic_padding`) gives a compiled step fixed shapes: the short last batch dropped, inputs
        `(batch_size, sequence_length)` and start / end positions `(batch_size,)`, static, no grouping.
        """
        if drop_remainder and dynamic_padding:
            raise ValueError("fixed-shape batches (drop_remainder) are padded to the window length, "
                             "not dynamically")
        pad_multiple = default_pad_multiple() if pad_multiple is None else pad_multiple
        inputs = {k: tf.constant(v) for k, v in self.inputs().items()}
        labels = {"start_logits": tf.constant(self.start_positions), "end_logits": tf.constant(self.end_positions)}
        grouped = group_by_length and not drop_remainder
        batches = index_batches(len(self), batch_size, shuffle=shuffle, seed=seed,
                                lengths=self.padding_mask.sum(-1) if grouped else None,
                                drop_remainder=drop_remainder)

        def gather(index):
            batch = {k: tf.gather(v, index) for k, v in inputs.items()}
            if dynamic_padding:
                longest = tf.reduce_max(tf.reduce_sum(tf.cast(batch["padding_mask"], tf.int32), axis=1))
                width = padded_length(longest, pad_multiple, self.sequence_length)
                batch = {k: v[:, :width] for k, v in batch.items()}
            out = (batch, {k: tf.gather(v, index) for k, v in labels.items()}) if with_labels else batch
            return static_batch(out, batch_size, self.sequence_length) if drop_remainder else out

        return as_written(batches.map(gather, num_parallel_calls=tf.data.AUTOTUNE).prefetch(tf.data.AUTOTUNE))


def _answer_token_span(starts: np.ndarray, ends: np.ndarray, char_start: int, char_end: int):
    """First and last context token overlapping characters [char_start, char_end); None if none."""
    overlap = np.nonzero((ends > char_start) & (starts < char_end))[0]
    if len(overlap) == 0:
        return None
    return int(overlap[0]), int(overlap[-1])


def _window_starts(num_tokens: int, window: int, doc_stride: int) -> list[int]:
    starts, start = [], 0
    while True:
        starts.append(start)
        if start + window >= num_tokens:
            return starts
        start += min(window, doc_stride)


def build_qa_features(
    examples: Sequence[Example],
    tokenizer: BertTokenizer,
    sequence_length: int = 384,
    doc_stride: int = 128,
    max_query_length: int = 64,
    batch_size: int = 256,
) -> QAFeatures:
    """Tokenizes questions and contexts and cuts each context into overlapping windows.

    Args:
        examples: sequence of {"id", "question", "context", "answers": [{"text", "answer_start"}]}
            (as `kbert.tasks.question_answering.read_squad` returns); the first answer is the training target.
        tokenizer: `kbert.BertTokenizer`.
        sequence_length: int. Window length in tokens, with `[CLS]`, question and the separators of the
            tokenizer's pair layout (`packing_layout`: `[SEP]` twice for BERT, `</s>` three times for RoBERTa).
        doc_stride: int. Tokens between the starts of consecutive windows.
        max_query_length: int. Questions are cut to this many tokens.
        batch_size: int. Texts tokenized per TF call.

    Returns:
        `QAFeatures`.

    Example:
    >>> tok = kbert.BertTokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "who", "?", "bob", "ran"])  # doctest: +SKIP
    >>> f = build_qa_features([{"id": "1", "question": "who?", "context": "bob ran",
    ...                         "answers": [{"text": "bob", "answer_start": 0}]}], tok, 16)  # doctest: +SKIP
    >>> int(f.start_positions[0]), int(f.end_positions[0])  # doctest: +SKIP
    (4, 4)
    """
    if doc_stride < 1:
        raise ValueError(f"doc_stride must be >= 1, got {doc_stride}")
    layout = packing_layout(tokenizer)  # the tokenizer's pair layout, as `BertPreprocessor` packs it

    def tokenize_all(texts):
        ids, starts, ends = [], [], []
        for i in range(0, len(texts), batch_size):
            t, s, e = tokenizer.tokenize_with_offsets(tf.constant(texts[i:i + batch_size]))
            ids += [np.asarray(r) for r in t.to_list()]
            starts += [np.asarray(r) for r in s.to_list()]
            ends += [np.asarray(r) for r in e.to_list()]
        return ids, starts, ends

    questions, _, _ = tokenize_all([str(e["question"]) for e in examples])
    contexts = list(dict.fromkeys(str(e["context"]) for e in examples))  # many questions share one
    c_ids, c_starts, c_ends = tokenize_all(contexts)
    context_index = {c: i for i, c in enumerate(contexts)}

    rows: dict[str, list] = {k: [] for k in ("token_ids", "segment_ids", "padding_mask", "start_positions",
                                              "end_positions", "example_index", "char_starts", "char_ends",
                                              "max_context")}
    L = sequence_length
    for index, example in enumerate(examples):
        query = questions[index][:max_query_length]
        k = context_index[str(example["context"])]
        ids, starts, ends = c_ids[k], c_starts[k], c_ends[k]
        span = None
        answers = example.get("answers") or []
        if answers and not example.get("is_impossible", False):
            answer = answers[0]
            begin = int(answer["answer_start"])
            span = _answer_token_span(starts, ends, begin, begin + len(answer["text"]))
        window = L - len(query) - 2 - layout["separators"]
        if window < 1:
            raise ValueError(f"example {example.get('id', index)!r}: sequence_length {L} leaves no room for "
                             f"context after its {len(query)}-token question (lower max_query_length)")
        window_starts = _window_starts(len(ids), window, doc_stride)
        for w_start in window_starts:
            w_len = min(window, len(ids) - w_start)
            offset = len(query) + 1 + layout["separators"]  # [CLS] question [SEP] (RoBERTa: </s></s>)
            token_ids = np.full(L, tokenizer.pad_token_id, np.int32)
            token_ids[0] = tokenizer.cls_token_id
            token_ids[1:1 + len(query)] = query
            token_ids[1 + len(query):offset] = tokenizer.sep_token_id
            token_ids[offset:offset + w_len] = ids[w_start:w_start + w_len]
            token_ids[offset + w_len] = tokenizer.sep_token_id
            segment_ids = np.zeros(L, np.int32)
            segment_ids[offset:offset + w_len + 1] = layout["second_segment_id"]
            char_starts = np.full(L, -1, np.int32)
            char_ends = np.full(L, -1, np.int32)
            char_starts[offset:offset + w_len] = starts[w_start:w_start + w_len]
            char_ends[offset:offset + w_len] = ends[w_start:w_start + w_len]
            max_context = np.zeros(L, bool)
            for j in range(w_len):
                max_context[offset + j] = _is_max_context(window_starts, window, len(ids), w_start, w_start + j)
            start_position = end_position = 0
            if span is not None and span[0] >= w_start and span[1] < w_start + w_len:
                start_position, end_position = span[0] - w_start + offset, span[1] - w_start + offset
            for name, value in (("token_ids", token_ids), ("segment_ids", segment_ids),
                                ("padding_mask", np.arange(L) < offset + w_len + 1),
                                ("start_positions", start_position), ("end_positions", end_position),
                                ("example_index", index), ("char_starts", char_starts),
                                ("char_ends", char_ends), ("max_context", max_context)):
                rows[name].append(value)
    if not rows["token_ids"]:
        raise ValueError("no examples")
    arrays = {name: np.stack(values) if np.ndim(values[0]) else np.asarray(values)
              for name, values in rows.items()}
    for name in ("start_positions", "end_positions", "example_index"):
        arrays[name] = arrays[name].astype(np.int32)
    return QAFeatures(**arrays, sequence_length=L, doc_stride=doc_stride, max_query_length=max_query_length)


def _is_max_context(window_starts: list[int], window: int, num_tokens: int, this_start: int, token: int) -> bool:
    """Whether `token` has its best context in the window starting at `this_start`.

    Score = min(tokens to its left, tokens to its right) + 0.01 * window length (`run_squad.py`).
    """
    best_score, best_start = None, None
    for start in window_starts:
        length = min(window, num_tokens - start)
        if not start <= token < start + length:
            continue
        score = min(token - start, start + length - 1 - token) + 0.01 * length
        if best_score is None or score > best_score:
            best_score, best_start = score, start
    return best_start == this_start
