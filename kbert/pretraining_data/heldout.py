"""Held-out pretraining sets with fixed masks, so every checkpoint of a run is scored on the same targets.

A held-out set is built once, in memory: from text (packed and masked with the run's own settings and a
fixed seed) or from a `create-pretraining-data` directory (read in file order; dynamic shards are masked
once with a fixed seed). Evaluating it at step 500 and at step 5000 asks the same questions.
"""

from __future__ import annotations

import dataclasses
import itertools
import os

import numpy as np
import tensorflow as tf

from kbert.data_pipeline import without_autotune
from kbert.pretraining_data.create import CreatePretrainingDataConfig, pretraining_records
from kbert.pretraining_data.tfrecords import load_pretraining_dataset

HELDOUT_SEED = 20240607


def _in_memory(features: list[dict[str, np.ndarray]], batch_size: int) -> tf.data.Dataset:
    columns = {name: np.stack([f[name] for f in features]) for name in features[0]}
    return without_autotune(tf.data.Dataset.from_tensor_slices(columns).batch(batch_size).cache())


def heldout_from_text(
    config: CreatePretrainingDataConfig, tokenizer, batch_size: int, max_instances: int = 2048
) -> tf.data.Dataset:
    """Held-out text as statically masked batches, the same on every call.

    Args:
        config: CreatePretrainingDataConfig. The run's instance and masking settings (`input` is the
            held-out text); the seed is replaced by a fixed one, the dupe factor by 1, masking by static.
        tokenizer: the run's tokenizer (from `kbert.load_tokenizer`).
        batch_size: int. Evaluation batch size.
        max_instances: int. Instances kept (the first ones).

    Returns:
        A finite, cached `tf.data.Dataset` of `pretraining_feature_spec` batches (last batch partial).

    Example:
        >>> config = CreatePretrainingDataConfig(input=["heldout.txt"], sequence_length=128)  # doctest: +SKIP
        >>> heldout = heldout_from_text(config, tokenizer, batch_size=64)  # doctest: +SKIP
    """
    config = dataclasses.replace(config, seed=HELDOUT_SEED, dupe_factor=1, masking="static")
    records = list(itertools.islice(pretraining_records(config, tokenizer), max_instances))
    return _in_memory(records, batch_size)


def heldout_from_directory(
    directory: str | os.PathLike, batch_size: int, max_instances: int = 2048
) -> tf.data.Dataset:
    """A `create-pretraining-data` directory as held-out batches, the same on every call.

    Args:
        directory: str | PathLike. The directory.
        batch_size: int. Evaluation batch size.
        max_instances: int. Instances kept (the first ones, in file order).

    Returns:
        A finite, cached `tf.data.Dataset` of `pretraining_feature_spec` batches (last batch partial).
    """
    dataset = load_pretraining_dataset(directory, batch_size=256, shuffle=False, drop_remainder=False,
                                       seed=HELDOUT_SEED)
    features: list[dict[str, np.ndarray]] = []
    for batch in dataset.as_numpy_iterator():
        features.extend({k: v[i] for k, v in batch.items()} for i in range(len(batch["token_ids"])))
        if len(features) >= max_instances:
            break
    if not features:
        raise ValueError(f"The held-out directory {directory} holds no instance.")
    return _in_memory(features[:max_instances], batch_size)
