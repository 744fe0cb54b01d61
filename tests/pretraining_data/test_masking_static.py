"""StaticMasker: exact deterministic cases and statistics over many samples (15%, 80/10/10, whole words)."""

import random

import pytest

from kbert.pretraining_data.static_masking import MissingMaskTokenError, StaticMasker
from pretraining_data.masking_cases import CLS, MASK, SEP, UNK, VOCAB, sequence, word_spans


def test_mask_everything_deterministically():
    masker = StaticMasker(VOCAB, masked_lm_prob=1.0, max_predictions_per_seq=10, random_token_rate=0.0,
                          mask_token_rate=1.0, seed=0)
    out = masker([CLS, 7, 8, SEP, 9, UNK, SEP])
    assert out.token_ids == [CLS, MASK, MASK, SEP, MASK, UNK, SEP]
    assert out.masked_positions == [1, 2, 4] and out.masked_ids == [7, 8, 9]
    keep = StaticMasker(VOCAB, 1.0, 10, mask_token_rate=0.0, random_token_rate=0.0, seed=0)([CLS, 7, 8, SEP])
    assert keep.token_ids == [CLS, 7, 8, SEP] and keep.masked_positions == [1, 2]


def test_budget_is_googles_rule_and_capped():
    masker = StaticMasker(VOCAB, masked_lm_prob=0.15, max_predictions_per_seq=12, seed=0)
    rng = random.Random(0)
    for length, expected in [(5, 1), (20, 3), (100, 12), (60, 9)]:  # min(12, max(1, round(n * .15)))
        assert len(masker(sequence(rng, length)).masked_positions) == expected


def test_statistics_15_percent_and_80_10_10_never_special():
    masker = StaticMasker(VOCAB, masked_lm_prob=0.15, max_predictions_per_seq=40, seed=1)
    rng = random.Random(1)
    tokens = chosen = as_mask = unchanged = randomized = 0
    for _ in range(1500):
        ids = sequence(rng, 100)
        out = masker(ids)
        tokens += len(ids)
        chosen += len(out.masked_positions)
        assert out.masked_ids == [ids[p] for p in out.masked_positions]
        assert all(ids[p] not in (CLS, SEP, UNK) for p in out.masked_positions)
        assert all(out.token_ids[i] == ids[i] for i in range(len(ids)) if i not in out.masked_positions)
        for p in out.masked_positions:
            as_mask += out.token_ids[p] == MASK
            unchanged += out.token_ids[p] == ids[p]
            randomized += out.token_ids[p] not in (MASK, ids[p])
    assert chosen / tokens == pytest.approx(0.15, abs=0.003)
    assert as_mask / chosen == pytest.approx(0.8, abs=0.015)
    assert unchanged / chosen == pytest.approx(0.1, abs=0.012)
    assert randomized / chosen == pytest.approx(0.1, abs=0.012)


def test_whole_word_masking_masks_whole_words():
    masker = StaticMasker(VOCAB, masked_lm_prob=0.15, max_predictions_per_seq=40, whole_word_masking=True, seed=2)
    rng = random.Random(2)
    tokens = chosen = multi = 0
    for _ in range(800):
        ids = sequence(rng, 80, pieces=True)
        positions = set(masker(ids).masked_positions)
        for span in word_spans(ids):
            assert positions.issuperset(span) or positions.isdisjoint(span), (ids, span, positions)
            multi += len(span) > 1 and positions.issuperset(span)
        tokens += len(ids)
        chosen += len(positions)
    assert multi > 100  # multi-piece words really were masked
    assert 0.14 <= chosen / tokens <= 0.151


def test_whole_word_masking_with_segmenter_word_starts():
    masker = StaticMasker(VOCAB, masked_lm_prob=0.5, max_predictions_per_seq=40, whole_word_masking=True, seed=3)
    ids = [CLS, 5, 6, 7, 8, 9, 10, SEP]
    starts = [True, True, False, False, True, True, False, True]  # words 5-6-7 / 8 / 9-10
    seen = set()
    for _ in range(200):
        positions = tuple(masker(ids, starts).masked_positions)
        seen.add(positions)
    # Budget round(8 * 0.5) = 4; words are tried in random order and one that would overflow is skipped,
    # so every order ends in one of these two unions of whole words.
    assert seen == {(1, 2, 3, 4), (4, 5, 6)}


def test_vocab_without_mask_is_a_named_error():
    with pytest.raises(MissingMaskTokenError, match=r"no \[MASK\] token"):
        StaticMasker([t for t in VOCAB if t != "[MASK]"])
    with pytest.raises(ValueError, match="masked_lm_prob"):
        StaticMasker(VOCAB, masked_lm_prob=0.0)
