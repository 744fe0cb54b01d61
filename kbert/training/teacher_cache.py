"""`kbert distill --cache-teacher DIR`: the teacher's outputs on the training batches, computed once and read back.

Without a cache the `Distiller` runs the teacher in every step of every epoch: E epochs cost E teacher passes. With
one, a single pass writes each batch of one epoch, with the teacher's outputs beside its inputs, to DIR
(a TFRecord file through TensorFlow's file systems, gs:// and ram:// included); training then reads them back,
every epoch in a fresh seeded order, and never runs the teacher. The batches themselves are those of that pass: an
epoch reorders them but does not regroup their rows (uncached, each epoch draws new batches).

DIR is written in a hidden sibling and moved into place when complete (`file_io.staged_directory`), with
`teacher_cache.json`: what the outputs were computed from. A later run whose teacher, data and batching are the
same reads DIR without loading its data through the teacher again; any other is refused, naming what differs, and
a DIR that is not a teacher cache is never written over. A DIR never holds a half-written cache.
"""

from __future__ import annotations

import json
from typing import Any

import keras
import tensorflow as tf

import kbert.file_io as file_io
from kbert.tasks.serving import MODEL_INPUTS

# The inputs' key under which a cached batch carries the teacher's outputs (the Distiller reads it).
TEACHER_OUTPUTS = "teacher_outputs"
RECORD = "teacher_cache.json"
BATCHES = "batches.tfrecord"


def cached_teacher_batches(data: tf.data.Dataset, batches: int, teacher: keras.Model, directory: str,
                           key: dict[str, Any], seed: int) -> tf.data.Dataset:
    """The batches of `data` with the teacher's outputs, from `directory`, written there first if need be.

    Args:
        data: one epoch of training batches, (inputs, labels, labelled) (`kbert.training.distill.mixed_batches`).
        batches: the number of batches in `data`.
        teacher: the teacher model, run in inference mode on each batch once.
        directory: the cache's directory: a complete cache of `key`, or a path that does not exist yet.
        key: what the outputs depend on (teacher, data, batching: JSON values); a cache of another key is refused.
        seed: the seed of the batches' order, drawn anew each epoch.

    Returns:
        The dataset of (inputs with `TEACHER_OUTPUTS`, labels, labelled), as many batches as `data`.

    Raises:
        ValueError: `directory` holds a cache of another key, or files that are not a teacher cache.
    """
    key = json.loads(json.dumps(key))  # as the record reads back: tuples become lists
    labelled = with_outputs(data, teacher)  # traced here; the teacher runs only if the batches are written below
    record_path = file_io.join(directory, RECORD)
    if file_io.exists(record_path):
        written = file_io.read_json(record_path)["key"]
        differs = sorted(name for name in set(key) | set(written) if key.get(name) != written.get(name))
        if differs:
            verb = "differs" if len(differs) == 1 else "differ"
            raise ValueError(f"{directory} holds the teacher's outputs for other settings ({', '.join(differs)} "
                             f"{verb}): give --cache-teacher another directory, or remove this one")
    elif file_io.exists(directory) and file_io.listdir(directory):
        raise ValueError(f"{directory} is not a teacher cache (it has no {RECORD}) and is not empty: "
                         f"give --cache-teacher a new directory")
    else:
        with file_io.staged_directory(directory) as staged:
            write_batches(labelled, file_io.join(staged, BATCHES))
            file_io.write_json(file_io.join(staged, RECORD), {"key": key, "batches": batches})
    cached = read_batches(file_io.join(directory, BATCHES), labelled.element_spec)
    cached = cached.apply(tf.data.experimental.assert_cardinality(batches))
    return cached.shuffle(batches, seed=seed, reshuffle_each_iteration=True)


# A batch is one TFRecord: its tensors (flattened in `tf.nest` order), each serialized, in one serialized string
# tensor. Written from a Python loop rather than `tf.data.Dataset.save`, which hangs when its input fails midway
# (TensorFlow 2.21), where a failed teacher pass here raises and leaves nothing behind.
def write_batches(data: tf.data.Dataset, path: str) -> None:
    """Writes each element of `data` (nested tensors) as one record of the TFRecord file `path`."""
    with tf.io.TFRecordWriter(path) as writer:
        for element in data:
            parts = [tf.io.serialize_tensor(tensor) for tensor in tf.nest.flatten(element)]
            writer.write(tf.io.serialize_tensor(tf.stack(parts)).numpy())


def read_batches(path: str, spec: Any) -> tf.data.Dataset:
    """The elements `write_batches` wrote to `path`, with the structure, dtypes and shapes of `spec`."""
    flat = tf.nest.flatten(spec)

    def parse(record):
        parts = tf.io.parse_tensor(record, tf.string)
        tensors = [tf.ensure_shape(tf.io.parse_tensor(parts[i], s.dtype), s.shape) for i, s in enumerate(flat)]
        return tf.nest.pack_sequence_as(spec, tensors)

    return tf.data.TFRecordDataset(path).map(parse)


def with_outputs(data: tf.data.Dataset, teacher: keras.Model) -> tf.data.Dataset:
    """`data`'s batches with the teacher's outputs (inference mode) added to the inputs under `TEACHER_OUTPUTS`."""

    def add(inputs, labels, labelled):
        outputs = teacher({name: inputs[name] for name in MODEL_INPUTS}, training=False)
        return {**inputs, TEACHER_OUTPUTS: outputs}, labels, labelled

    return data.map(add)
