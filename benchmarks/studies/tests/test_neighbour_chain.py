"""The chain of benchmarks/studies/neighbour_chain.py: each masked token is decided by its neighbour."""

import numpy as np

from benchmarks.studies.neighbour_chain import FIRST_WORD, MASK_ID, chain_batches


def test_chain_batches_follow_one_permutation_and_mask_only_the_scored_positions():
    batches = chain_batches(vocab_size=40, seq_length=16, predictions=3, batch_size=8, seed=0)
    masked, positions, targets = next(batches)
    assert masked.shape == (8, 16) and positions.shape == targets.shape == (8, 3)
    assert (positions >= 1).all() and (np.diff(positions, axis=1) > 0).all()
    assert (np.take_along_axis(masked, positions, 1) == MASK_ID).all()
    assert ((masked == MASK_ID).sum(axis=1) == 3).all()
    # Unmask, then every token is the permutation of the one before: one mapping over the whole batch.
    ids = masked.copy()
    np.put_along_axis(ids, positions, targets, 1)
    assert ids.min() >= FIRST_WORD
    following = {}
    for row in ids:
        for previous, token in zip(row[:-1], row[1:]):
            assert following.setdefault(previous, token) == token
    assert len(set(following.values())) == len(following)  # a permutation: no two words lead to the same one
    second, _, _ = next(batches)
    assert not np.array_equal(second, masked)
