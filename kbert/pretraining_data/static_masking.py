"""Static masked-LM masking (in Python, for `create-pretraining-data`), as in Google's BERT and ALBERT.

The dynamic counterpart, drawn fresh every epoch inside `tf.data`, is
`kbert.pretraining_data.dynamic_masking`; both take a `MaskingVocabulary` and the n-gram weights here, so
they mask the same tokens with the same statistics.
"""

from __future__ import annotations

import bisect
import itertools
import random
from collections.abc import Sequence
from dataclasses import dataclass

from kbert.pretraining_data.masking_vocabulary import (  # noqa: F401  (re-exported: callers import them here)
    MaskingVocabulary, MissingMaskTokenError, continuation_flags, mask_token_id, special_token_ids)


def ngram_weights(ngram: int) -> list[float]:
    """The cumulative weights of span lengths 1..`ngram`: p(n) is proportional to 1/n, as in ALBERT.

    Example:
        >>> ngram_weights(3)  # 1, 1 + 1/2, 1 + 1/2 + 1/3
        [1.0, 1.5, 1.8333333333333333]
    """
    if ngram < 1:
        raise ValueError(f"ngram must be >= 1, got {ngram}.")
    return list(itertools.accumulate(1.0 / n for n in range(1, ngram + 1)))


@dataclass(frozen=True)
class MaskedExample:
    """The result of masking one sequence.

    Attributes:
        token_ids: the input ids after masking (80% `[MASK]`, 10% random, 10% unchanged).
        masked_positions: the masked positions, ascending.
        masked_ids: the original ids at those positions.
    """

    token_ids: list[int]
    masked_positions: list[int]
    masked_ids: list[int]


class StaticMasker:
    """Chooses masked-LM targets for one sequence, as Google's `create_masked_lm_predictions` does.

    `min(max_predictions_per_seq, max(1, round(len(token_ids) * masked_lm_prob)))` tokens are chosen
    among the non-special tokens. The units of choice are tokens, or whole words with
    `whole_word_masking`. With `ngram` N > 1 (ALBERT's n-gram masking), the units are cut, left to right,
    into spans of n in 1..N consecutive units, p(n) proportional to 1/n over the lengths that fit before
    a special token; spans are taken in random order, and a span that would overflow the count is
    shortened to the units that fit, or skipped when none does. ALBERT's script instead visits start
    units in random order and skips a span that overlaps one already chosen, which tilts the masked
    lengths toward 1: for N = 3, 15% of 128 one-piece words, its spans of 1/2/3 words come out about
    0.60/0.26/0.15 where 1/n gives 0.55/0.27/0.18; cut first, they come out 0.58/0.27/0.15 (only the
    span shortened to meet the count moves them; 0.555/0.27/0.175 at 512). N = 1 is BERT's rule: random
    units, each skipped when it would overflow (the same draws, so the same masks for a seed, as before
    n-grams existed). Each chosen token becomes
    `[MASK]` with probability 0.8, a uniformly random vocabulary id with 0.1 (over the whole vocabulary,
    as Google and tensorflow-text's `MaskValuesChooser` do), and stays unchanged with 0.1. Written here
    (not tensorflow-text) because the static path runs in plain Python over id lists, with no TF op per
    sequence, and tensorflow-text has no n-gram selector.

    Args:
        vocabulary: Sequence[str] | MaskingVocabulary. The tokens in id order (BERT's special-token names:
            must contain `[MASK]`), or `MaskingVocabulary.from_tokenizer(tokenizer)` for any tokenizer.
        masked_lm_prob: float. Fraction of the tokens to predict.
        max_predictions_per_seq: int. Cap on the predictions per sequence.
        whole_word_masking: bool. Mask whole words: a piece that continues a word (WordPiece `##`; no `▁`/`Ġ`
            in SentencePiece/byte-level vocabularies) joins the previous token's group, and `word_starts`
            (e.g. from jieba for Chinese) can mark further word boundaries.
        mask_token_rate: float. Share of chosen tokens replaced by `[MASK]`.
        random_token_rate: float. Share of chosen tokens replaced by a random id.
        seed: int | None. Seed of the masker's own `random.Random`.
        ngram: int. Longest span of consecutive units (words with `whole_word_masking`) masked together.

    Call arguments:
        token_ids: Sequence[int]. A packed sequence (`[CLS] A [SEP] B [SEP]`), without padding.
        word_starts: Sequence[bool] | None. Per token, True where a segmenter word starts; a token with
            False joins the previous token's word. None: every token starts a word (the vocabulary decides).

    Returns:
        A `MaskedExample`.

    Example:
        >>> vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat"]
        >>> masker = StaticMasker(vocab, masked_lm_prob=0.5, max_predictions_per_seq=2, seed=0)
        >>> len(masker([2, 5, 6, 3]).masked_positions)
        2
        >>> trigrams = StaticMasker(vocab, 1.0, 8, whole_word_masking=True, ngram=3, seed=0)
        >>> trigrams.choose_spans([2, 5, 6, 5, 6, 5, 3])  # five words cut into spans of 1 to 3 words
        [[1, 2, 3], [4, 5]]
    """

    def __init__(
        self,
        vocabulary: Sequence[str] | MaskingVocabulary,
        masked_lm_prob: float = 0.15,
        max_predictions_per_seq: int = 20,
        whole_word_masking: bool = False,
        mask_token_rate: float = 0.8,
        random_token_rate: float = 0.1,
        seed: int | None = None,
        ngram: int = 1,
    ) -> None:
        if not 0.0 < masked_lm_prob <= 1.0:
            raise ValueError(f"masked_lm_prob must be in (0, 1], got {masked_lm_prob}.")
        if max_predictions_per_seq < 1:
            raise ValueError(f"max_predictions_per_seq must be >= 1, got {max_predictions_per_seq}.")
        if mask_token_rate < 0 or random_token_rate < 0 or mask_token_rate + random_token_rate > 1:
            raise ValueError("mask_token_rate and random_token_rate must be >= 0 and sum to <= 1.")
        vocab = MaskingVocabulary.of(vocabulary)
        self.vocab_size, self.mask_id, self.special_ids = vocab.size, vocab.mask_id, vocab.special_ids
        self.word_starts = vocab.word_starts
        self.masked_lm_prob = masked_lm_prob
        self.max_predictions_per_seq = max_predictions_per_seq
        self.whole_word_masking = whole_word_masking
        self.mask_token_rate, self.random_token_rate = mask_token_rate, random_token_rate
        self.ngram = int(ngram)
        self.ngram_weights = ngram_weights(self.ngram)
        self.rng = random.Random(seed)

    def num_to_predict(self, length: int) -> int:
        """How many tokens a sequence of `length` tokens (specials included) gets masked."""
        return min(self.max_predictions_per_seq, max(1, int(round(length * self.masked_lm_prob))))

    def groups(self, token_ids: Sequence[int], word_starts: Sequence[bool] | None = None) -> list[list[int]]:
        """The candidate positions, grouped into whole words when `whole_word_masking` is set."""
        groups: list[list[int]] = []
        for i, token in enumerate(token_ids):
            if token in self.special_ids:
                continue
            joins = (
                self.whole_word_masking
                and groups
                and groups[-1][-1] == i - 1
                and (not self.word_starts[token] or (word_starts is not None and not word_starts[i]))
            )
            if joins:
                groups[-1].append(i)
            else:
                groups.append([i])
        return groups

    def choose_spans(self, token_ids: Sequence[int], word_starts: Sequence[bool] | None = None) -> list[list[int]]:
        """The positions to mask, as spans of 1..`ngram` consecutive units, in the order they were chosen."""
        units = self.groups(token_ids, word_starts)
        # run[k]: how many units from unit k on follow each other with no special token between (at most ngram).
        run = [1] * len(units)
        for k in range(len(units) - 2, -1, -1):
            if units[k + 1][0] == units[k][-1] + 1:
                run[k] = min(self.ngram, run[k + 1] + 1)
        candidates, k = [], 0
        while k < len(units):
            n = self._span_length(run[k])
            candidates.append(units[k:k + n])
            k += n
        self.rng.shuffle(candidates)
        budget = self.num_to_predict(len(token_ids))
        spans: list[list[int]] = []
        count = 0
        for candidate in candidates:
            if count >= budget:
                break
            span: list[int] = []
            for unit in candidate:  # the units that fit: the whole span, a shorter one, or none (skipped)
                if count + len(span) + len(unit) > budget:
                    break
                span.extend(unit)
            if span:
                spans.append(span)
                count += len(span)
        return spans

    def _span_length(self, longest: int) -> int:
        """n in 1..longest with p(n) proportional to 1/n (no draw when only 1 fits, so ngram=1 draws nothing)."""
        if longest == 1:
            return 1
        weights = self.ngram_weights
        return bisect.bisect_left(weights, self.rng.random() * weights[longest - 1], hi=longest - 1) + 1

    def __call__(self, token_ids: Sequence[int], word_starts: Sequence[bool] | None = None) -> MaskedExample:
        if word_starts is not None and len(word_starts) != len(token_ids):
            raise ValueError(f"word_starts has {len(word_starts)} flags for {len(token_ids)} tokens.")
        rng = self.rng
        chosen = [position for span in self.choose_spans(token_ids, word_starts) for position in span]
        output = list(token_ids)
        for position in chosen:
            draw = rng.random()
            if draw < self.mask_token_rate:
                output[position] = self.mask_id
            elif draw < self.mask_token_rate + self.random_token_rate:
                output[position] = rng.randrange(self.vocab_size)
        chosen.sort()
        return MaskedExample(output, chosen, [token_ids[p] for p in chosen])
