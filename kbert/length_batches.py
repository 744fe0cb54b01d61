"""Inference batches of similar lengths, for callers that hold their whole input: each window of
`GROUP_WINDOW` batches' worth of consecutive items is sorted longest first before it is cut into batches, so a
batch pads little, and memory stays that of one window whatever the input's size. Callers write their answers
back in the input's order.

TensorFlow-free (the command line's `kbert predict` and `kbert embed` decide batches before TensorFlow loads);
training's batches of similar length are `kbert.data_pipeline.index_batches`.
"""

from __future__ import annotations

from typing import Sequence

from kbert.constants import GROUP_WINDOW


def longest_first(lengths: Sequence[int], batch_size: int, window: int = GROUP_WINDOW) -> list[list[int]]:
    """Batches of item indices: each window of `window * batch_size` consecutive items, longest first (ties in
    input order), cut into batches of `batch_size`; `window=1` keeps consecutive items as they come.

    Args:
        lengths: each item's length (characters are a good enough proxy for tokens).
        batch_size: int. Items per batch (>= 1).
        window: int. Batches sorted together (>= 1).

    Returns:
        The batches, each a list of indices into `lengths`; every index once.

    Example:
    >>> longest_first([3, 9, 1, 7, 5], batch_size=2)
    [[1, 3], [4, 0], [2]]
    >>> longest_first([3, 9, 1, 7, 5], batch_size=2, window=1)
    [[0, 1], [2, 3], [4]]
    """
    if batch_size < 1 or window < 1:
        raise ValueError(f"batch_size and window must be at least 1, got {batch_size} and {window}")
    span = batch_size * window
    batches = []
    for start in range(0, len(lengths), span):
        order = range(start, min(start + span, len(lengths)))
        if window > 1:
            order = sorted(order, key=lambda i: -lengths[i])
        batches += [list(order[i:i + batch_size]) for i in range(0, len(order), batch_size)]
    return batches
