"""Dynamic masked-LM masking inside `tf.data`: fresh masks every epoch, and the features it yields.

Both pipelines (static TFRecords from `create-pretraining-data`, and dynamic masking here) yield the
same features, `pretraining_feature_spec`, so one model consumes either:

    token_ids           int32   [seq]   `[CLS] A [SEP] B [SEP]` after masking, padded with `[PAD]`
    segment_ids         int32   [seq]
    padding_mask        bool    [seq]   True on real tokens
    masked_positions    int32   [max_predictions_per_seq]   ascending, padded with 0
    masked_ids          int32   [max_predictions_per_seq]   the original ids there, padded with 0
    masked_weights      float32 [max_predictions_per_seq]   1.0 real, 0.0 padding
    next_sentence_label int32   []      NSP: 0 IsNext, 1 random; SOP: 0 in order, 1 swapped

The datasets yield this dict alone (Keras `fit` treats it as `x`), and the pretraining model computes its
losses from it; `split_features_labels` gives `(x, y, sample_weight)` for a model compiled with losses.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import tensorflow as tf

from kbert.pretraining_data.masking_vocabulary import MaskingVocabulary
from kbert.pretraining_data.static_masking import ngram_weights

LABEL_KEYS = ("masked_ids", "masked_weights", "next_sentence_label")


def pretraining_feature_spec(
    sequence_length: int | None, max_predictions_per_seq: int | None, batch_dims: Sequence[int | None] = ()
) -> dict[str, tf.TensorSpec]:
    """The features both pipelines yield (see the module docstring); `batch_dims=(None,)` when batched."""
    seq, preds, lead = [sequence_length], [max_predictions_per_seq], list(batch_dims)
    return {
        "token_ids": tf.TensorSpec(lead + seq, tf.int32),
        "segment_ids": tf.TensorSpec(lead + seq, tf.int32),
        "padding_mask": tf.TensorSpec(lead + seq, tf.bool),
        "masked_positions": tf.TensorSpec(lead + preds, tf.int32),
        "masked_ids": tf.TensorSpec(lead + preds, tf.int32),
        "masked_weights": tf.TensorSpec(lead + preds, tf.float32),
        "next_sentence_label": tf.TensorSpec(lead, tf.int32),
    }


def split_features_labels(features: dict[str, tf.Tensor]) -> tuple[dict, dict, dict]:
    """Splits a feature dict into Keras `(x, y, sample_weight)`.

    `x`: token_ids, segment_ids, padding_mask, masked_positions. `y`: {"mlm": masked_ids,
    "sentence": next_sentence_label}. `sample_weight`: {"mlm": masked_weights}.
    """
    x = {k: v for k, v in features.items() if k not in LABEL_KEYS}
    y = {"mlm": features["masked_ids"], "sentence": features["next_sentence_label"]}
    return x, y, {"mlm": features["masked_weights"]}


class DynamicMasker:
    """Masks batches of unmasked instances inside `tf.data`, with new masks every epoch.

    The same rule as `kbert.pretraining_data.static_masking.StaticMasker`: `min(max_predictions_per_seq,
    max(1, round(length * masked_lm_prob)))` of the non-special tokens, chosen in random whole-word
    groups when `whole_word_masking` is set (a group that would overflow ends the choice), then 80% `[MASK]`, 10%
    random id, 10% unchanged. With `ngram` N > 1 the units (tokens, or whole words) are first cut, left
    to right, into spans of n in 1..N units (p(n) proportional to 1/n over the lengths that fit before a
    special token, as in ALBERT); spans are then taken in random order, and the span that would overflow
    the count keeps the units that fit and ends the choice (the static masker goes on to later spans that
    still fit). The cut is a scan over the sequence, the one step that is not elementwise or a sort.
    Written with stateless TF ops instead of tensorflow-text's
    `RandomItemSelector`/`MaskValuesChooser` because those draw from stateful random ops, which repeat
    the same masks on every epoch once a global seed is set, and count whole-word rates in words rather
    than word pieces. Seeds come from `tf.data.Dataset.random(rerandomize_each_iteration=True)`.

    Args:
        vocabulary: Sequence[str] | MaskingVocabulary. The tokens in id order (must contain `[MASK]`), or
            `MaskingVocabulary.from_tokenizer(tokenizer)`.
        max_predictions_per_seq: int. Length of the masked_* features.
        masked_lm_prob: float. Fraction of tokens to predict.
        whole_word_masking: bool. Mask whole words (the vocabulary's word starts, and a `word_starts`
            feature when present).
        mask_token_rate: float. Share of chosen tokens set to `[MASK]`.
        random_token_rate: float. Share of chosen tokens set to a random id.
        seed: int | None. Seed of the per-batch seeds; None draws a fresh one.
        ngram: int. Longest span of consecutive units masked together.

    Call arguments:
        features: dict with `token_ids` int32, `segment_ids`, `padding_mask` bool, `next_sentence_label`
            ([batch, seq] or [seq]) and optionally `word_starts` bool.
        seed: int tensor of shape [2], the stateless seed.

    Returns:
        The `pretraining_feature_spec` dict.

    Example:
        >>> masker = DynamicMasker(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a"], 2, seed=0)
        >>> out = masker({"token_ids": tf.constant([2, 5, 5, 3]), "segment_ids": tf.zeros([4], tf.int32),
        ...               "padding_mask": tf.ones([4], tf.bool), "next_sentence_label": tf.constant(0)},
        ...              tf.constant([1, 2]))
        >>> out["masked_weights"].numpy().tolist()
        [1.0, 0.0]
    """

    def __init__(
        self,
        vocabulary: Sequence[str] | MaskingVocabulary,
        max_predictions_per_seq: int,
        masked_lm_prob: float = 0.15,
        whole_word_masking: bool = False,
        mask_token_rate: float = 0.8,
        random_token_rate: float = 0.1,
        seed: int | None = None,
        ngram: int = 1,
    ) -> None:
        vocab = MaskingVocabulary.of(vocabulary)
        self.vocab_size = vocab.size
        self.mask_id = vocab.mask_id
        special = np.zeros(vocab.size, dtype=bool)
        special[sorted(vocab.special_ids)] = True
        self.is_special = tf.constant(special)
        self.is_continuation = tf.constant(~np.array(vocab.word_starts, dtype=bool))
        self.max_predictions_per_seq = int(max_predictions_per_seq)
        self.masked_lm_prob = float(masked_lm_prob)
        self.whole_word_masking = bool(whole_word_masking)
        self.mask_token_rate, self.random_token_rate = float(mask_token_rate), float(random_token_rate)
        self.seed = seed
        self.ngram = int(ngram)
        self.ngram_weights = tf.constant(ngram_weights(self.ngram), tf.float32)

    def __call__(self, features: dict[str, tf.Tensor], seed: tf.Tensor) -> dict[str, tf.Tensor]:
        if features["token_ids"].shape.rank == 1:
            batched = {k: tf.expand_dims(v, 0) for k, v in features.items()}
            return {k: tf.squeeze(v, 0) for k, v in self(batched, seed).items()}
        ids = tf.cast(features["token_ids"], tf.int32)  # (batch, seq)
        valid = tf.cast(features["padding_mask"], tf.bool)
        seq = tf.shape(ids)[1]
        preds = self.max_predictions_per_seq
        seeds = tf.random.experimental.stateless_split(tf.cast(seed, tf.int64), 3)
        chosen = self.choose_spans(features, seed) >= 0
        # Masked positions ascending, padded with 0.
        positions = tf.broadcast_to(tf.range(seq)[None, :], tf.shape(ids))
        key = -tf.math.top_k(-tf.where(chosen, positions, seq + positions), k=tf.minimum(preds, seq)).values
        key = tf.pad(key, [[0, 0], [0, preds - tf.shape(key)[1]]], constant_values=2 * seq)
        real = key < seq
        masked_positions = tf.where(real, key, 0)
        masked_ids = tf.where(real, tf.gather(ids, masked_positions, batch_dims=1), 0)
        draw = tf.random.stateless_uniform(tf.shape(ids), seeds[1])
        random_ids = tf.random.stateless_uniform(tf.shape(ids), seeds[2], 0, self.vocab_size, tf.int32)
        replaced = tf.where(draw < self.mask_token_rate, self.mask_id,
                            tf.where(draw < self.mask_token_rate + self.random_token_rate, random_ids, ids))
        return {
            "token_ids": tf.where(chosen, replaced, ids),
            "segment_ids": tf.cast(features["segment_ids"], tf.int32),
            "padding_mask": valid,
            "masked_positions": masked_positions,
            "masked_ids": masked_ids,
            "masked_weights": tf.cast(real, tf.float32),
            "next_sentence_label": tf.cast(features["next_sentence_label"], tf.int32),
        }

    def choose_spans(self, features: dict[str, tf.Tensor], seed: tf.Tensor) -> tf.Tensor:
        """The tokens that `__call__` masks with this seed, by span.

        Args:
            features: dict. As in the call: `token_ids`, `padding_mask` and optionally `word_starts`.
            seed: int tensor of shape [2], the stateless seed.

        Returns:
            int32, the shape of `token_ids`: per masked token an id that the tokens of its span share
            (a span is 1..`ngram` units: tokens, or whole words), -1 on tokens that are not masked.
        """
        if features["token_ids"].shape.rank == 1:
            return tf.squeeze(self.choose_spans({k: tf.expand_dims(v, 0) for k, v in features.items()}, seed), 0)
        ids = tf.cast(features["token_ids"], tf.int32)  # (batch, seq)
        valid = tf.cast(features["padding_mask"], tf.bool)
        seq = tf.shape(ids)[1]
        preds = self.max_predictions_per_seq
        seeds = tf.random.experimental.stateless_split(tf.cast(seed, tf.int64), 3)  # [0] chooses, [1:] replace
        candidate = valid & ~tf.gather(self.is_special, ids)
        lengths = tf.reduce_sum(tf.cast(valid, tf.float32), axis=1)
        budget = tf.minimum(preds, tf.maximum(1, tf.cast(tf.round(lengths * self.masked_lm_prob), tf.int32)))
        noise = tf.random.stateless_uniform(tf.shape(ids), seeds[0])
        if self.whole_word_masking or self.ngram > 1:
            return self._choose_units(features, ids, candidate, noise, budget, seed)
        # The `budget` candidates with the smallest noise.
        smallest, _ = tf.math.top_k(-tf.where(candidate, noise, 2.0), k=tf.minimum(preds, seq))
        threshold = -tf.gather(smallest, tf.maximum(budget, 1) - 1, batch_dims=1)
        positions = tf.broadcast_to(tf.range(seq)[None, :], tf.shape(ids))
        return tf.where(candidate & (noise <= threshold[:, None]), positions, -1)

    def _choose_units(self, features, ids, candidate, noise, budget, seed):
        """Units (whole words, or tokens) in spans of random order while they fit the budget; a span stays
        contiguous when sorted, and the span that overflows keeps the units that fit."""
        batch, seq = tf.shape(ids)[0], tf.shape(ids)[1]
        starts = tf.ones_like(candidate)
        if self.whole_word_masking:
            starts = ~tf.gather(self.is_continuation, ids)
            if "word_starts" in features:
                starts &= tf.cast(features["word_starts"], tf.bool)
        previous = tf.pad(candidate[:, :-1], [[0, 0], [1, 0]])
        new_unit = ~candidate | starts | ~previous
        group = tf.cumsum(tf.cast(new_unit, tf.int32), axis=1) - 1  # the unit of each token
        span = group  # the first unit of each token's span
        if self.ngram > 1:
            span = self._ngram_spans(candidate, new_unit, group, tf.random.experimental.stateless_fold_in(
                tf.cast(seed, tf.int64), 3))
        score = tf.where(candidate, tf.gather(noise, span, batch_dims=1), 2.0)  # one score per span
        order = tf.argsort(score, axis=1, stable=True)
        sorted_candidate = tf.gather(candidate, order, batch_dims=1)
        count = tf.cumsum(tf.cast(sorted_candidate, tf.int32), axis=1)
        segment = tf.gather(group, order, batch_dims=1) + tf.range(batch)[:, None] * seq
        group_end = tf.math.unsorted_segment_max(count, segment, batch * seq)
        chosen_sorted = sorted_candidate & (tf.gather(group_end, segment) <= budget[:, None])
        rows = tf.broadcast_to(tf.range(batch)[:, None], tf.shape(order))
        chosen = tf.scatter_nd(tf.stack([rows, order], -1), chosen_sorted, tf.shape(ids))
        return tf.where(chosen, span, -1)

    def _ngram_spans(self, candidate, new_unit, group, seed):
        """Cuts each run of units (between special tokens) into spans of n ~ 1/n units, left to right.

        Returns, per token, the unit index of its span's first unit.
        """
        unit_start = candidate & new_unit
        # Units left in the run from each token on: units at or after it, less those after its run ends.
        after = tf.cumsum(tf.cast(unit_start, tf.int32), axis=1, reverse=True)
        after_exclusive = after - tf.cast(unit_start, tf.int32)
        run = tf.cumsum(tf.cast(~candidate, tf.int32), axis=1)  # a run and the special token before it
        batch, seq = tf.shape(run)[0], tf.shape(run)[1]
        run_ids = run + tf.range(batch)[:, None] * (seq + 1)
        beyond = tf.gather(tf.math.unsorted_segment_min(after_exclusive, run_ids, batch * (seq + 1)), run_ids)
        longest = tf.minimum(after - beyond, self.ngram)
        # n in 1..longest with p(n) proportional to 1/n: the first n whose cumulative weight reaches u.
        weights = self.ngram_weights
        target = tf.random.stateless_uniform(tf.shape(run), seed) * tf.gather(weights, tf.maximum(longest, 1) - 1)
        lengths = 1 + tf.reduce_sum(tf.cast(weights[None, None, :-1] < target[:, :, None], tf.int32), axis=2)

        def step(state, inputs):
            left, first = state  # units still to come in the current span, and its first unit
            is_candidate, is_start, n, unit = inputs
            opens = is_start & (left == 0)
            first = tf.where(opens, unit, first)
            left = tf.where(~is_candidate, 0, tf.where(opens, n - 1, tf.where(is_start, left - 1, left)))
            return left, first

        elements = [tf.transpose(x) for x in (candidate, unit_start, lengths, group)]  # (seq, batch)
        initial = (tf.zeros([batch], tf.int32), tf.zeros([batch], tf.int32))
        _, first = tf.scan(step, elements, initializer=initial)
        return tf.transpose(first)

    def apply(self, dataset: tf.data.Dataset) -> tf.data.Dataset:
        """Maps the masker over `dataset` (batched or not), with fresh seeds on every iteration."""
        seeds = tf.data.Dataset.random(seed=self.seed, rerandomize_each_iteration=True).batch(2)
        return tf.data.Dataset.zip(dataset, seeds).map(self, num_parallel_calls=tf.data.AUTOTUNE)
