"""Sharded TFRecords of pretraining instances, and reading them back as `tf.data` features.

An output directory holds `part-00000-of-0000N.tfrecord` shards, `vocab.txt` and `pretraining_data.json`
(the settings, the vocabulary file and each shard's record count and size), so `kbert pretrain` on it
needs no `--vocab`. Static shards hold masked features; dynamic shards hold unmasked instances that
`DynamicMasker` masks afresh every epoch. Either way `load_pretraining_dataset` yields
`pretraining_feature_spec`. The directory's layout, metadata and integrity checks are in
`kbert.pretraining_data.shards`.
"""

from __future__ import annotations

import os
import random
import struct
from collections.abc import Iterable

import numpy as np
import tensorflow as tf

import kbert.file_io as file_io
from kbert.data_pipeline import without_autotune
from kbert.pretraining_data.dynamic_masking import DynamicMasker
from kbert.pretraining_data.masking_vocabulary import MaskingVocabulary
from kbert.pretraining_data.shards import (FORMAT, METADATA_FILE, copy_tokenizer_files, read_pretraining_metadata,
                                           tfrecord_files, verify_tfrecords)
from kbert.pretraining_data.text_dataset import instance_arrays

__all__ = ["load_pretraining_dataset", "static_features", "write_pretraining_tfrecords"]


def static_features(instance, masker, sequence_length: int, max_predictions_per_seq: int, pad_id: int = 0):
    """Masks a `PretrainingInstance` with a `StaticMasker` into padded arrays of the feature spec."""
    arrays = instance_arrays(instance, sequence_length, pad_id)
    masked = masker(instance.token_ids, instance.word_starts if masker.whole_word_masking else None)
    n, k = len(masked.token_ids), len(masked.masked_positions)
    pad = max_predictions_per_seq - k
    if pad < 0:
        raise ValueError(f"{k} predictions exceed max_predictions_per_seq={max_predictions_per_seq}.")
    token_ids = arrays["token_ids"].copy()
    token_ids[:n] = masked.token_ids
    return {
        "token_ids": token_ids,
        "segment_ids": arrays["segment_ids"],
        "padding_mask": arrays["padding_mask"],
        "masked_positions": np.array(masked.masked_positions + [0] * pad, np.int32),
        "masked_ids": np.array(masked.masked_ids + [0] * pad, np.int32),
        "masked_weights": np.array([1.0] * k + [0.0] * pad, np.float32),
        "next_sentence_label": arrays["next_sentence_label"],
    }


def _example(features: dict[str, np.ndarray]) -> bytes:
    feature = {}
    for name, value in features.items():
        value = np.atleast_1d(value)
        if value.dtype.kind == "f":
            feature[name] = tf.train.Feature(float_list=tf.train.FloatList(value=value.tolist()))
        else:
            feature[name] = tf.train.Feature(int64_list=tf.train.Int64List(value=value.astype(np.int64).tolist()))
    # deterministic: map entries in a fixed order, so equal features give equal bytes in any process.
    return tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString(deterministic=True)


def write_pretraining_tfrecords(
    records: Iterable[dict[str, np.ndarray]],
    output_dir: str | os.PathLike,
    *,
    vocab_file: str | os.PathLike,
    settings: dict,
    num_shards: int = 1,
    seed: int | None = 0,
) -> dict:
    """Writes feature dicts into `num_shards` TFRecord shards in a random order, plus vocab and metadata.

    Records arrive in corpus order: a book made one document gives thousands of instances in a row, and a
    reader's shuffle buffer cannot mix records that far apart, so training would see one source for
    hundreds of steps. Google's script shuffles all instances in memory; here the same global shuffle
    runs in two passes with bounded memory: each record goes to one of `max(64, num_shards)` temporary
    buckets at random, then each bucket (a random sample of the whole corpus) is read back, shuffled and
    appended to shard `bucket % num_shards`. Memory holds one bucket, not the corpus.

    Args:
        records: an iterable of feature dicts (`static_features` or `instance_arrays`).
        output_dir: str | PathLike. Created if needed.
        vocab_file: str | PathLike. The vocabulary file (copied as `vocab.txt`) or tokenizer directory
            (its tokenizer files copied), see `copy_tokenizer_files`.
        settings: dict. Must hold "masking" ("static" or "dynamic"), "sequence_length",
            "max_predictions_per_seq"; everything in it is recorded.
        num_shards: int. Number of shards.
        seed: int | None. Seed of the shuffle (None: a fresh one).

    Returns:
        The metadata written to `pretraining_data.json` (written last: a directory without it is unfinished).
    """
    for key in ("masking", "sequence_length", "max_predictions_per_seq"):
        if key not in settings:
            raise ValueError(f"settings needs {key!r}.")
    output_dir = file_io.fspath(output_dir)
    file_io.makedirs(output_dir)
    file_io.remove(file_io.join(output_dir, METADATA_FILE))  # an older run's, which would vouch for new shards
    names = [f"part-{i:05d}-of-{num_shards:05d}.tfrecord" for i in range(num_shards)]
    counts = [0] * num_shards
    rng = random.Random(seed)
    bucket_dir = file_io.join(output_dir, ".shuffle-buckets")
    file_io.rmtree(bucket_dir)
    file_io.makedirs(bucket_dir)
    bucket_names = [file_io.join(bucket_dir, f"{b:05d}") for b in range(max(_SHUFFLE_BUCKETS, num_shards))]
    try:
        buckets = [file_io.open_file(name, "wb") for name in bucket_names]
        try:
            for features in records:
                _write_framed(buckets[rng.randrange(len(buckets))], _example(features))
        finally:
            for bucket in buckets:
                bucket.close()
        writers = [tf.io.TFRecordWriter(file_io.join(output_dir, name)) for name in names]
        try:
            for index, bucket in enumerate(bucket_names):
                serialized = _read_framed(bucket)
                rng.shuffle(serialized)
                for example in serialized:
                    writers[index % num_shards].write(example)
                counts[index % num_shards] += len(serialized)
        finally:
            for writer in writers:
                writer.close()
    finally:
        file_io.rmtree(bucket_dir)
    copied = copy_tokenizer_files(vocab_file, output_dir)
    metadata = {
        "format": FORMAT,
        "version": 1,
        **settings,
        "vocab_file": copied,
        "num_instances": sum(counts),
        "shards": [
            {"file": name, "records": count, "bytes": file_io.size(file_io.join(output_dir, name))}
            for name, count in zip(names, counts)
        ],
    }
    file_io.write_json(file_io.join(output_dir, METADATA_FILE), metadata)
    return metadata


_SHUFFLE_BUCKETS = 64


def _write_framed(file, data: bytes) -> None:
    """Appends one length-prefixed record to a temporary bucket file."""
    file.write(struct.pack("<Q", len(data)) + data)


def _read_framed(path: str | os.PathLike) -> list[bytes]:
    """The records of a bucket file written by `_write_framed` (a GFile no record went to is never created)."""
    data, out, offset = file_io.read_bytes(path) if file_io.exists(path) else b"", [], 0
    while offset < len(data):
        (size,) = struct.unpack_from("<Q", data, offset)
        out.append(data[offset + 8: offset + 8 + size])
        offset += 8 + size
    return out


def _parse_spec(metadata: dict) -> dict[str, tf.io.FixedLenFeature]:
    seq, preds = metadata["sequence_length"], metadata["max_predictions_per_seq"]
    names = ["token_ids", "segment_ids", "padding_mask"]
    spec = {name: tf.io.FixedLenFeature([seq], tf.int64) for name in names}
    spec["next_sentence_label"] = tf.io.FixedLenFeature([1], tf.int64)
    if metadata["masking"] == "dynamic":
        spec["word_starts"] = tf.io.FixedLenFeature([seq], tf.int64)
    else:
        spec["masked_positions"] = tf.io.FixedLenFeature([preds], tf.int64)
        spec["masked_ids"] = tf.io.FixedLenFeature([preds], tf.int64)
        spec["masked_weights"] = tf.io.FixedLenFeature([preds], tf.float32)
    return spec


def load_pretraining_dataset(
    directory: str | os.PathLike,
    batch_size: int,
    *,
    shuffle: bool = True,
    shuffle_buffer: int = 10000,
    repeat: bool = False,
    drop_remainder: bool = True,
    seed: int | None = None,
    verify: bool = False,
) -> tf.data.Dataset:
    """Reads a `create-pretraining-data` directory as batches of `pretraining_feature_spec`.

    Static shards are parsed as they are; dynamic shards are masked with `DynamicMasker` (fresh masks
    every epoch) using the recorded vocabulary and settings.

    Args:
        directory: str | PathLike. The output directory of `create-pretraining-data`.
        batch_size: int. Batch size.
        shuffle: bool. Shuffle files and records.
        shuffle_buffer: int. Records shuffled together.
        repeat: bool. Repeat forever.
        drop_remainder: bool. Drop the last partial batch (static shapes).
        seed: int | None. Seed of shuffling and dynamic masks.
        verify: bool. Read every record once first, to fail early naming a corrupt file.

    Returns:
        A batched `tf.data.Dataset` of feature dicts.
    """
    metadata = read_pretraining_metadata(directory)
    files = tfrecord_files(directory)
    if verify:
        verify_tfrecords(files)
    spec = _parse_spec(metadata)
    dataset = tf.data.Dataset.from_tensor_slices(files)
    if shuffle:
        dataset = dataset.shuffle(len(files), seed=seed)
    dataset = dataset.interleave(
        tf.data.TFRecordDataset, cycle_length=min(len(files), 8), num_parallel_calls=tf.data.AUTOTUNE,
        deterministic=not shuffle)
    if shuffle:
        dataset = dataset.shuffle(shuffle_buffer, seed=seed)
    if repeat:
        dataset = dataset.repeat()

    def parse(serialized):
        raw = tf.io.parse_example(serialized, spec)
        out = {k: tf.cast(v, tf.bool if k in ("padding_mask", "word_starts") else v.dtype) for k, v in raw.items()}
        out = {k: tf.cast(v, tf.int32) if v.dtype == tf.int64 else v for k, v in out.items()}
        out["next_sentence_label"] = out["next_sentence_label"][:, 0]
        return out

    dataset = dataset.batch(batch_size, drop_remainder=drop_remainder).map(parse, tf.data.AUTOTUNE)
    if metadata["masking"] == "dynamic":
        from kbert.text import load_tokenizer

        tokenizer = load_tokenizer(directory, lowercase=metadata.get("lowercase", True))
        masker = DynamicMasker(MaskingVocabulary.from_tokenizer(tokenizer), metadata["max_predictions_per_seq"],
                               metadata["masked_lm_prob"], metadata.get("whole_word_masking", False), seed=seed,
                               ngram=metadata.get("ngram", 1))
        dataset = masker.apply(dataset)
    return without_autotune(dataset.prefetch(tf.data.AUTOTUNE))
