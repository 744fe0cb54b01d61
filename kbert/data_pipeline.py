"""tf.data settings shared by kbert's input pipelines (fine-tuning tasks and pretraining).

- No autotuning thread: deleting an iterator with autotuning on could wait 12-15 s for its thread.
- Batches padded to their longest row, unless XLA compiles the step (then lengths round up to 16).
- The task pipelines run as written, without tf.data's static rewrites, which each new iterator paid for.
- Training batches of similar lengths (`index_batches`), keeping the labels mixed where they are given.
- Fixed shapes for a compiled step (`static_batch`, `drop_remainder`).

Each choice was measured on all-MiniLM-L6-v2 fine-tuning or its tokenizer:
docs/investigations/data-pipeline.md gives the figures and the alternatives that lost.
"""

from __future__ import annotations

from typing import Sequence

import tensorflow as tf

from kbert.constants import GROUP_WINDOW

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


def padded_length(length: tf.Tensor, multiple: int, maximum: int) -> tf.Tensor:
    """`length` rounded up to a multiple of `multiple`, at most `maximum` (dynamic padding's batch length).

    Example:
    >>> int(padded_length(tf.constant(17), 16, 128)), int(padded_length(tf.constant(120), 16, 128))
    (32, 128)
    """
    return tf.minimum((length + multiple - 1) // multiple * multiple, maximum)


def pad_to_multiple(inputs: dict[str, tf.Tensor], multiple: int, maximum: int, fill: dict | None = None):
    """Pads dynamically padded (batch, L) features on the right to a multiple of `multiple` (<= maximum).

    Rounding batch lengths up keeps the number of distinct shapes small (XLA compiles once per shape);
    `multiple` 1 returns the features as they are.
    """
    if multiple <= 1:
        return inputs
    fill = fill or {}
    length = tf.shape(inputs["token_ids"])[1]
    target = tf.maximum(padded_length(length, multiple, maximum), length)
    out = {}
    for name, value in inputs.items():
        pad = tf.constant(fill.get(name, 0), value.dtype) if value.dtype != tf.bool else False
        out[name] = tf.pad(value, [[0, 0], [0, target - length]], constant_values=pad)
    return out


def check_fixed_padding(padding: str, drop_remainder: bool) -> None:
    """Raises ValueError when fixed-size batches (`drop_remainder`) meet a preprocessor's dynamic `padding`.

    Example:
    >>> check_fixed_padding("fixed", drop_remainder=True)
    """
    if drop_remainder and padding != "fixed":
        raise ValueError("fixed-shape batches (drop_remainder) need a BertPreprocessor with padding='fixed', "
                         f"got padding={padding!r}")


def length_order(run: tf.Tensor, lengths: tf.Tensor, strata: tuple[tf.Tensor, int] | None = None) -> tf.Tensor:
    """The example indices `run` in the order `index_batches` cuts into batches: by length, or given
    `strata` (class ids of every example, and their number), by each example's place within its own
    stratum, which interleaves the strata in their shares, each one still in length order.

    Example:
    >>> lengths, labels = tf.constant([1, 10, 2, 11, 3, 12]), tf.constant([0, 1, 0, 1, 0, 1])
    >>> length_order(tf.range(6), lengths).numpy().tolist()
    [0, 2, 4, 1, 3, 5]
    >>> length_order(tf.range(6), lengths, (labels, 2)).numpy().tolist()
    [0, 1, 2, 3, 4, 5]
    """
    run = tf.gather(run, tf.argsort(tf.gather(lengths, run), stable=True))
    if strata is None:
        return run
    stratum, depth = strata
    members = tf.one_hot(tf.gather(stratum, run), depth, dtype=tf.float32)
    rank = tf.reduce_sum(tf.cumsum(members, axis=0) * members, axis=1) - 0.5
    share = rank / tf.reduce_sum(members * tf.reduce_sum(members, axis=0), axis=1)
    return tf.gather(run, tf.argsort(share, stable=True))


def static_batch(features, batch_size: int, sequence_length: int):
    """`features` (a nest of `(batch,)` and `(batch, sequence_length)` tensors) with those static shapes.

    Checked at run time (`tf.ensure_shape`), so a batch of another shape fails loudly instead of
    retracing a compiled step.

    Example:
    >>> x = static_batch({"ids": tf.zeros([2, 4], tf.int32), "label": tf.zeros([2])}, 2, 4)
    >>> x["ids"].shape.as_list(), x["label"].shape.as_list()
    ([2, 4], [2])
    """
    def fix(tensor: tf.Tensor) -> tf.Tensor:
        if tensor.shape.rank not in (1, 2):
            raise ValueError(f"expected (batch,) or (batch, length) features, got shape {tensor.shape}")
        return tf.ensure_shape(tensor, [batch_size, sequence_length][:tensor.shape.rank])

    return tf.nest.map_structure(fix, features)


def index_batches(count: int, batch_size: int, *, shuffle: bool = False, seed: int | None = None,
                  lengths: Sequence[int] | None = None, strata: Sequence[int] | None = None,
                  window: int = GROUP_WINDOW, drop_remainder: bool = False) -> tf.data.Dataset:
    """Batches of example indices (int64 vectors) for a pipeline that gathers from in-memory examples.

    Without `shuffle` the indices come in order. With it, each iteration (epoch) shuffles them afresh;
    given `lengths` too, each run of `window * batch_size` shuffled indices is sorted by length, cut into
    batches, and the batches are shuffled (a buffer of `window`), so a batch holds rows of similar length
    and dynamic padding pads little. Given `strata` too (class labels), the run is ordered by each
    example's place within its own stratum instead, so every batch holds the strata in the run's shares.
    Grouping needs more than one run: at `count <= window * batch_size` the batches stay random, since
    the sorted epoch would hold nearly the same batches whatever the seed. Every way gives
    `ceil(count / batch_size)` batches, every index once an epoch; only one batch is short (the last
    one, unless grouped).

    Args:
        count: int. Examples; indices run over `range(count)`.
        batch_size: int. Indices per batch.
        shuffle: bool. A new random order every iteration.
        seed: optional int. Seed of the shuffles.
        lengths: optional `count` numbers, each example's length in tokens (with `shuffle` and more than
            one run of examples: group by it).
        strata: optional `count` non-negative ints (class ids): with `lengths`, keep their shares per batch.
        window: int. Batches per sorted run: more pads less, but makes a batch's rows less random.
        drop_remainder: bool. Drop the short last batch of every epoch (`count // batch_size` batches of a
            static size, for a compiled step); not with `lengths`.

    Example:
    >>> [b.numpy().tolist() for b in index_batches(3, 2)]
    [[0, 1], [2]]
    >>> sorted(len(b) for b in index_batches(5, 2, shuffle=True, seed=0, lengths=[3, 1, 2, 5, 4], window=1))
    [1, 2, 2]
    """
    if lengths is not None and len(lengths) != count:
        raise ValueError(f"{len(lengths)} lengths for {count} examples")
    if strata is not None and len(strata) != count:
        raise ValueError(f"{len(strata)} strata for {count} examples")
    if drop_remainder and lengths is not None:
        raise ValueError("fixed-size batches (drop_remainder) are not grouped by length")
    indices = tf.data.Dataset.range(count)
    if not shuffle:
        return indices.batch(batch_size, drop_remainder=drop_remainder)
    indices = indices.shuffle(count, seed=seed, reshuffle_each_iteration=True)
    if lengths is None or count <= window * batch_size:
        return indices.batch(batch_size, drop_remainder=drop_remainder)
    key = tf.constant(lengths, tf.int64)
    stratum = None if strata is None else tf.constant(strata, tf.int32)
    depth = None if strata is None else max(strata) + 1
    runs = (indices.batch(window * batch_size)
            .map(lambda run: length_order(run, key, None if stratum is None else (stratum, depth)))
            .unbatch())
    batches = runs.batch(batch_size).shuffle(window, seed=None if seed is None else seed + 1,
                                             reshuffle_each_iteration=True)
    # `unbatch` loses the count; `fit` shows progress and knows the epoch's end with it.
    return batches.apply(tf.data.experimental.assert_cardinality(-(-count // batch_size)))
