"""Static masked-LM masking (in Python, for `create-pretraining-data`), as in Google's BERT.

The dynamic counterpart, drawn fresh every epoch inside `tf.data`, is
`kbert.pretraining_data.dynamic_masking`; both share the vocabulary helpers here, so they mask the same
tokens with the same statistics.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from kbert.constants import MASK, SPECIAL_TOKENS


class MissingMaskTokenError(ValueError):
    """The vocabulary has no `[MASK]` token, so masked-LM inputs cannot be made from it."""


def mask_token_id(vocabulary: Sequence[str]) -> int:
    """Returns the id of `[MASK]`, or raises `MissingMaskTokenError` naming the problem."""
    try:
        return list(vocabulary).index(MASK)
    except ValueError:
        raise MissingMaskTokenError(
            f"The vocabulary ({len(vocabulary)} tokens) has no {MASK} token; masked-LM pretraining needs one. "
            "Add a [MASK] line to vocab.txt (BERT vocabularies have it at id 103)."
        ) from None


def special_token_ids(vocabulary: Sequence[str]) -> list[int]:
    """Ids of [PAD] [UNK] [CLS] [SEP] [MASK] that are in `vocabulary`: these are never masked."""
    index = {token: i for i, token in enumerate(vocabulary) if token in SPECIAL_TOKENS}
    return sorted(index.values())


def continuation_flags(vocabulary: Sequence[str]) -> np.ndarray:
    """A bool array over the vocabulary: True for WordPiece continuation pieces (`##...`)."""
    return np.array([token.startswith("##") for token in vocabulary], dtype=bool)


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
    among the non-special tokens, in random (whole-word) groups; a group that would overflow that count
    is skipped. Each chosen token becomes `[MASK]` with probability 0.8, a uniformly random vocabulary id
    with 0.1 (over the whole vocabulary, as Google and tensorflow-text's `MaskValuesChooser` do), and
    stays unchanged with 0.1. Written here (not tensorflow-text) because the static path runs in plain
    Python over id lists, with no TF op per sequence.

    Args:
        vocabulary: Sequence[str]. The WordPiece vocabulary, one token per id; must contain `[MASK]`.
        masked_lm_prob: float. Fraction of the tokens to predict.
        max_predictions_per_seq: int. Cap on the predictions per sequence.
        whole_word_masking: bool. Mask whole words: a `##` piece joins the previous token's group, and
            `word_starts` (e.g. from jieba for Chinese) can mark further word boundaries.
        mask_token_rate: float. Share of chosen tokens replaced by `[MASK]`.
        random_token_rate: float. Share of chosen tokens replaced by a random id.
        seed: int | None. Seed of the masker's own `random.Random`.

    Call arguments:
        token_ids: Sequence[int]. A packed sequence (`[CLS] A [SEP] B [SEP]`), without padding.
        word_starts: Sequence[bool] | None. Per token, True where a segmenter word starts; a token with
            False joins the previous token's word. None: every token starts a word (English: `##` decides).

    Returns:
        A `MaskedExample`.

    Example:
        >>> vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat"]
        >>> masker = StaticMasker(vocab, masked_lm_prob=0.5, max_predictions_per_seq=2, seed=0)
        >>> len(masker([2, 5, 6, 3]).masked_positions)
        2
    """

    def __init__(
        self,
        vocabulary: Sequence[str],
        masked_lm_prob: float = 0.15,
        max_predictions_per_seq: int = 20,
        whole_word_masking: bool = False,
        mask_token_rate: float = 0.8,
        random_token_rate: float = 0.1,
        seed: int | None = None,
    ) -> None:
        if not 0.0 < masked_lm_prob <= 1.0:
            raise ValueError(f"masked_lm_prob must be in (0, 1], got {masked_lm_prob}.")
        if max_predictions_per_seq < 1:
            raise ValueError(f"max_predictions_per_seq must be >= 1, got {max_predictions_per_seq}.")
        if mask_token_rate < 0 or random_token_rate < 0 or mask_token_rate + random_token_rate > 1:
            raise ValueError("mask_token_rate and random_token_rate must be >= 0 and sum to <= 1.")
        self.vocab_size = len(vocabulary)
        self.mask_id = mask_token_id(vocabulary)
        self.special_ids = frozenset(special_token_ids(vocabulary))
        self.is_continuation = continuation_flags(vocabulary).tolist()
        self.masked_lm_prob = masked_lm_prob
        self.max_predictions_per_seq = max_predictions_per_seq
        self.whole_word_masking = whole_word_masking
        self.mask_token_rate, self.random_token_rate = mask_token_rate, random_token_rate
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
                and (self.is_continuation[token] or (word_starts is not None and not word_starts[i]))
            )
            if joins:
                groups[-1].append(i)
            else:
                groups.append([i])
        return groups

    def __call__(self, token_ids: Sequence[int], word_starts: Sequence[bool] | None = None) -> MaskedExample:
        if word_starts is not None and len(word_starts) != len(token_ids):
            raise ValueError(f"word_starts has {len(word_starts)} flags for {len(token_ids)} tokens.")
        rng = self.rng
        groups = self.groups(token_ids, word_starts)
        rng.shuffle(groups)
        budget = self.num_to_predict(len(token_ids))
        chosen: list[int] = []
        for group in groups:
            if len(chosen) >= budget:
                break
            if len(chosen) + len(group) > budget:
                continue
            chosen.extend(group)
        output = list(token_ids)
        for position in chosen:
            draw = rng.random()
            if draw < self.mask_token_rate:
                output[position] = self.mask_id
            elif draw < self.mask_token_rate + self.random_token_rate:
                output[position] = rng.randrange(self.vocab_size)
        chosen.sort()
        return MaskedExample(output, chosen, [token_ids[p] for p in chosen])
