"""Sharded TFRecords: exact round trip, metadata, a global shuffle, dynamic records, corrupt files named."""

import json

import numpy as np
import pytest
import tensorflow as tf

from kbert.pretraining_data.instances import PretrainingInstance
from kbert.pretraining_data.shards import (CorruptTFRecordError, naming_corrupt_file, read_pretraining_metadata,
                                           tfrecord_files, verify_tfrecords)
from kbert.pretraining_data.text_dataset import instance_arrays
from kbert.pretraining_data.tfrecords import load_pretraining_dataset, write_pretraining_tfrecords

SETTINGS = {"masking": "static", "sequence_length": 8, "max_predictions_per_seq": 2, "objective": "nsp"}


def record(i):
    return {"token_ids": np.array([2, 4, 6 + i % 5, 3, 0, 0, 0, 0], np.int32),
            "segment_ids": np.array([0, 0, 0, 0, 0, 0, 0, 0], np.int32),
            "padding_mask": np.array([1, 1, 1, 1, 0, 0, 0, 0], bool),
            "masked_positions": np.array([1, 0], np.int32), "masked_ids": np.array([100 + i, 0], np.int32),
            "masked_weights": np.array([1.0, 0.0], np.float32), "next_sentence_label": np.int32(i % 2)}


def write(tmp_path, tiny_vocab_file, n=10, shards=3):
    return write_pretraining_tfrecords((record(i) for i in range(n)), tmp_path / "out", vocab_file=tiny_vocab_file,
                                       settings=SETTINGS, num_shards=shards)


def test_round_trip_exact_and_metadata(tmp_path, tiny_vocab_file):
    metadata = write(tmp_path, tiny_vocab_file)
    assert metadata["num_instances"] == sum(s["records"] for s in metadata["shards"]) == 10
    assert [s["records"] for s in metadata["shards"]] == [
        sum(1 for _ in tf.data.TFRecordDataset(str(f))) for f in tfrecord_files(tmp_path / "out")]
    assert not (tmp_path / "out" / ".shuffle-buckets").exists()
    assert (tmp_path / "out" / "vocab.txt").read_text() == tiny_vocab_file.read_text()
    assert read_pretraining_metadata(tmp_path / "out")["objective"] == "nsp"
    assert json.loads((tmp_path / "out" / "pretraining_data.json").read_text())["vocab_file"] == "vocab.txt"
    batches = list(load_pretraining_dataset(tmp_path / "out", 5, shuffle=False))
    got = {k: np.concatenate([b[k].numpy() for b in batches]) for k in batches[0]}
    assert sorted(got["masked_ids"][:, 0].tolist()) == list(range(100, 110))
    for row in range(10):
        expected = record(int(got["masked_ids"][row, 0]) - 100)
        for key, value in expected.items():
            np.testing.assert_array_equal(got[key][row], value)
    assert got["padding_mask"].dtype == bool and got["masked_weights"].dtype == np.float32


def test_records_are_shuffled_over_the_whole_corpus(tmp_path, tiny_vocab_file):
    # 600 records in corpus order: two "books" of 300. A reader's shuffle buffer cannot mix records this far
    # apart, so the writer must: every shard's first 50 records hold both books, in no sorted order.
    write(tmp_path, tiny_vocab_file, n=600, shards=2)
    shards = [[int(tf.train.Example.FromString(r.numpy()).features.feature["masked_ids"].int64_list.value[0]) - 100
               for r in tf.data.TFRecordDataset(str(f))] for f in tfrecord_files(tmp_path / "out")]
    assert sorted(shards[0] + shards[1]) == list(range(600))
    for shard in shards:
        head = shard[:50]
        assert min(head) < 300 <= max(head) and head != sorted(head)
    write(tmp_path / "again", tiny_vocab_file, n=600, shards=2)  # the same seed gives the same order
    assert [open(f, "rb").read() for f in tfrecord_files(tmp_path / "out")] == [
        open(f, "rb").read() for f in tfrecord_files(tmp_path / "again" / "out")]


def test_failed_write_leaves_no_metadata_and_no_buckets(tmp_path, tiny_vocab_file):
    write(tmp_path, tiny_vocab_file)

    def broken():
        yield record(0)
        raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        write_pretraining_tfrecords(broken(), tmp_path / "out", vocab_file=tiny_vocab_file, settings=SETTINGS)
    assert not (tmp_path / "out" / "pretraining_data.json").exists()  # the old run's must not vouch for it
    assert not (tmp_path / "out" / ".shuffle-buckets").exists()
    with pytest.raises(FileNotFoundError, match="no pretraining_data.json"):
        load_pretraining_dataset(tmp_path / "out", 2)


def test_dynamic_records_are_masked_afresh_each_epoch(tmp_path, tiny_vocab_file):
    instance = PretrainingInstance([2] + [5, 6, 7, 8, 9, 10, 11] * 4 + [3], [0] * 30, 0, [True] * 30)
    write_pretraining_tfrecords([instance_arrays(instance, 32)] * 8, tmp_path / "dyn", vocab_file=tiny_vocab_file,
                                settings={"masking": "dynamic", "sequence_length": 32, "max_predictions_per_seq": 5,
                                          "masked_lm_prob": 0.15})
    dataset = load_pretraining_dataset(tmp_path / "dyn", 8, seed=1)
    first, second = (next(iter(dataset))["masked_positions"].numpy() for _ in range(2))
    assert first.shape == (8, 5) and (first != second).any()
    assert (next(iter(dataset))["masked_weights"].numpy().sum(1) == 4).all()  # round(30 * 0.15)


def test_bit_flip_is_named(tmp_path, tiny_vocab_file):
    write(tmp_path, tiny_vocab_file)
    files = tfrecord_files(tmp_path / "out")
    data = bytearray(open(files[1], "rb").read())
    data[60] ^= 0xFF  # same size: only the CRC check can see it
    open(files[1], "wb").write(bytes(data))
    with pytest.raises(CorruptTFRecordError, match="part-00001-of-00003.tfrecord is corrupt after"):
        verify_tfrecords(files)
    with pytest.raises(CorruptTFRecordError, match="part-00001"):
        load_pretraining_dataset(tmp_path / "out", 2, verify=True)
    dataset = load_pretraining_dataset(tmp_path / "out", 2, shuffle=False)
    with pytest.raises(CorruptTFRecordError, match="part-00001") as caught:
        with naming_corrupt_file(files):
            for _ in dataset:
                pass
    assert isinstance(caught.value.__cause__ or caught.value.__context__, tf.errors.DataLossError)


def test_truncated_or_missing_shard_is_named(tmp_path, tiny_vocab_file):
    write(tmp_path, tiny_vocab_file)
    files = tfrecord_files(tmp_path / "out")
    open(files[2], "r+b").truncate(50)
    with pytest.raises(CorruptTFRecordError, match="part-00002-of-00003.tfrecord has 50 bytes"):
        load_pretraining_dataset(tmp_path / "out", 2)
    (tmp_path / "out" / "part-00000-of-00003.tfrecord").unlink()
    with pytest.raises(FileNotFoundError, match="part-00000-of-00003.tfrecord"):
        load_pretraining_dataset(tmp_path / "out", 2)
    with pytest.raises(FileNotFoundError, match="pretraining_data.json"):
        load_pretraining_dataset(tmp_path, 2)
