"""Each worker of a multi-worker run reads its own share of the input: by file, or by record.

Under `MultiWorkerMirroredStrategy`, Keras' `fit` hands the dataset to
`strategy.experimental_distribute_dataset`, which shards it across the workers by the dataset's
`tf.data.Options().experimental_distribute.auto_shard_policy`. Its default, `AUTO`, shards by file when
it finds file readers in the pipeline, and then stops with `InvalidArgumentError: Could not apply FILE
based sharding: the dataset only has 1 file(s) ...` when there are fewer files than workers (the one
shard `kbert create-pretraining-data` writes by default). `shard_across_workers` picks the policy
from the file count instead, the rule of Model Garden's `official/core/input_reader.py`:

- **By file** (`AutoShardPolicy.FILE`) when there are at least as many files as workers: worker `i`
  reads files `i, i + W, i + 2W, ...` of `W` workers and nothing else. This is the cheap way: every
  record is read, parsed and masked once, by one worker. Shards of similar size keep the workers even.
- **By record** (`AutoShardPolicy.DATA`) when there are fewer files than workers, with a warning that
  names the file count and says to write more shards (`--num-shards`): every worker reads, parses and
  masks all records and keeps every `W`-th batch piece of its own. The workers must see the records in
  the same order, so the shuffle needs a seed (`kbert pretrain --seed`, set by default); files read
  in parallel out of order can make the shares overlap a little: one more reason to write enough
  shards.
- **By record, silently**, for inputs that are not files (`files=None`: examples in memory, raw text
  read through Python).

With one worker the dataset is returned unchanged.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import tensorflow as tf

from kbert.training.keras_multi_worker_patch import in_multi_worker_mode
from kbert.training.strategy import num_workers

AutoShardPolicy = tf.data.experimental.AutoShardPolicy


def worker_count(strategy: tf.distribute.Strategy | None) -> int:
    """The number of workers that read input under `strategy` (1 unless it spans several workers).

    Args:
        strategy: tf.distribute.Strategy or None.

    Returns:
        int. The worker count named by TF_CONFIG in multi-worker mode, else 1.

    Example:
    >>> worker_count(tf.distribute.get_strategy())
    1
    """
    return num_workers() if in_multi_worker_mode(strategy) else 1


def sharding_policy(num_workers: int, num_files: int | None) -> AutoShardPolicy:
    """The share each of `num_workers` workers reads: `FILE` with enough files, else `DATA`.

    Args:
        num_workers: int. Workers reading the input (>= 1).
        num_files: int or None. Files the input is read from; None for inputs that are not files.

    Returns:
        `AutoShardPolicy.OFF` for one worker, `FILE` when `num_files >= num_workers`, else `DATA`.

    Example:
    >>> sharding_policy(2, 4) == AutoShardPolicy.FILE, sharding_policy(2, 1) == AutoShardPolicy.DATA
    (True, True)
    """
    if num_workers < 1:
        raise ValueError(f"num_workers must be >= 1, got {num_workers}")
    if num_workers == 1:
        return AutoShardPolicy.OFF
    if num_files is not None and num_files >= num_workers:
        return AutoShardPolicy.FILE
    return AutoShardPolicy.DATA


def shard_across_workers(
    dataset: tf.data.Dataset,
    num_workers: int,
    files: Sequence[str] | None = None,
    source: str = "the input",
) -> tf.data.Dataset:
    """`dataset` set to be split across `num_workers` workers by file or by record (module docstring).

    Call it on the finished (batched) dataset before `fit`; tf.distribute applies the split when `fit`
    distributes the dataset. The batch stays the global batch: each worker gets its share of it.

    Args:
        dataset: tf.data.Dataset. The input pipeline.
        num_workers: int. Workers reading the input (`worker_count(strategy)`).
        files: sequence of str or None. The files `dataset` reads; None when it reads no files.
        source: str. What the files are, for the warning (e.g. a data directory).

    Returns:
        The dataset with its auto-shard policy set (unchanged for one worker).

    Warns:
        UserWarning: fewer files than workers, so every worker reads every file.

    Example:
    >>> ds = shard_across_workers(tf.data.Dataset.range(8).batch(4), 2, files=["a", "b"])
    >>> ds.options().experimental_distribute.auto_shard_policy == AutoShardPolicy.FILE
    True
    """
    policy = sharding_policy(num_workers, None if files is None else len(files))
    if num_workers == 1:
        return dataset
    if policy == AutoShardPolicy.DATA and files is not None:
        warnings.warn(
            f"{source} has {len(files)} file(s) for {num_workers} workers: each worker reads all of it "
            f"and keeps 1/{num_workers} of the records. Write at least {num_workers} shards (kbert "
            f"create-pretraining-data --num-shards {num_workers} or more) so each worker reads only "
            "its own files.",
            UserWarning,
            stacklevel=2,
        )
    options = tf.data.Options()
    options.experimental_distribute.auto_shard_policy = policy
    return dataset.with_options(options)
