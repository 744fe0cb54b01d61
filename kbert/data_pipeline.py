"""tf.data settings shared by kbert's input pipelines (fine-tuning tasks and pretraining).

Three choices, each measured on all-MiniLM-L6-v2 fine-tuning or its tokenizer (2 CPU cores):

- **No autotuning thread.** `model.fit` deletes each epoch's iterator. With tf.data's autotuning on,
  deleting it joins the autotuning thread (`tensorflow::data::model::Model::OptimizeLoop`), which sleeps
  between optimisation rounds; in about one epoch in three the join waited 12-15 s (a third of a 26 s
  epoch), seen in gdb as the main thread in `~RootDataset::Iterator`. With autotuning off no epoch
  stalled, `AUTOTUNE` parallelism keeps its default (the core count) and `prefetch(AUTOTUNE)` still
  overlaps the step.
- **Pad to the longest row unless XLA will compile.** Keras traces `fit`'s step once for every batch
  length (the lengths are left open), so on CPU a new length costs only new oneDNN primitives, while
  padding costs compute: padding each batch to its longest row trained 15% faster than rounding lengths
  up to 16. XLA compiles once per shape, so where Keras' `jit_compile="auto"` turns it on (a GPU or TPU is
  present) lengths are rounded up to 16, a handful of shapes.
- **The task pipelines run as written.** They are already batch, parallel map, prefetch, which is what
  tf.data's default static rewrites would make of them; yet every new iterator (each epoch, each
  evaluation) pays for the rewrite: 16 ms of a 57 ms start for the tokenizing map, whatever rewrite is
  on, against 2.5 ms for a trivial map.
"""

from __future__ import annotations

import tensorflow as tf

ACCELERATOR_PAD_MULTIPLE = 16


def without_autotune(dataset: tf.data.Dataset) -> tf.data.Dataset:
    """`dataset` with tf.data autotuning off (no thread to join when `fit` drops an epoch's iterator).

    Example:
    >>> ds = without_autotune(tf.data.Dataset.range(4).prefetch(tf.data.AUTOTUNE))
    >>> ds.options().autotune.enabled
    False
    """
    options = tf.data.Options()
    options.autotune.enabled = False
    return dataset.with_options(options)


def as_written(dataset: tf.data.Dataset) -> tf.data.Dataset:
    """`without_autotune(dataset)` with tf.data's default static rewrites off too.

    For pipelines that are already in the shape the rewrites would give them (parallel map, prefetch).
    The options carry over to datasets built on this one: a `map` added later stays sequential unless it
    asks for `num_parallel_calls`.

    Example:
    >>> ds = as_written(tf.data.Dataset.range(4).map(lambda x: x + 1, num_parallel_calls=2))
    >>> ds.options().experimental_optimization.apply_default_optimizations, ds.options().autotune.enabled
    (False, False)
    """
    options = tf.data.Options()
    options.experimental_optimization.apply_default_optimizations = False
    return without_autotune(dataset).with_options(options)


def default_pad_multiple() -> int:
    """1 on a CPU-only host (Keras runs `fit` without XLA there), 16 where an accelerator is present."""
    devices = tf.config.list_physical_devices()
    return ACCELERATOR_PAD_MULTIPLE if any(d.device_type != "CPU" for d in devices) else 1
