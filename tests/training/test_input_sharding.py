"""Each worker's share of the input: by file with enough files, by record (with a warning) otherwise."""

import warnings

import pytest
import tensorflow as tf
from tensorflow.python.distribute import input_ops  # the rewrite tf.distribute applies per worker

from kbert.training.input_sharding import (
    AutoShardPolicy, shard_across_workers, sharding_policy, worker_count,
)


def _write_shards(directory, num_files, records_per_file=4):
    """TFRecord files whose records are "f{file}r{record}"."""
    files = []
    for f in range(num_files):
        path = str(directory / f"part-{f:05d}-of-{num_files:05d}.tfrecord")
        with tf.io.TFRecordWriter(path) as writer:
            for r in range(records_per_file):
                writer.write(f"f{f}r{r}".encode())
        files.append(path)
    return files


def _share(files, num_workers, index):
    """What worker `index` of `num_workers` reads from a pipeline over `files`, as tf.distribute splits it."""
    dataset = tf.data.Dataset.from_tensor_slices(files).interleave(tf.data.TFRecordDataset, cycle_length=1)
    dataset = shard_across_workers(dataset, num_workers, files, source="data/")
    dataset = input_ops.auto_shard_dataset(dataset, num_workers, index)
    return [record.decode() for record in dataset.as_numpy_iterator()]


def test_policy_follows_the_file_count():
    assert sharding_policy(1, 1) == AutoShardPolicy.OFF
    assert sharding_policy(2, 2) == AutoShardPolicy.FILE
    assert sharding_policy(2, 5) == AutoShardPolicy.FILE
    assert sharding_policy(2, 1) == AutoShardPolicy.DATA
    assert sharding_policy(4, 3) == AutoShardPolicy.DATA
    assert sharding_policy(2, None) == AutoShardPolicy.DATA  # not files: examples in memory
    with pytest.raises(ValueError, match="num_workers"):
        sharding_policy(0, 1)
    assert worker_count(tf.distribute.get_strategy()) == 1


def test_enough_files_each_worker_reads_its_own_files(tmp_path):
    files = _write_shards(tmp_path, 4)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no warning by file
        shares = [_share(files, 2, i) for i in range(2)]
    assert shares[0] == [f"f{f}r{r}" for f in (0, 2) for r in range(4)]
    assert shares[1] == [f"f{f}r{r}" for f in (1, 3) for r in range(4)]


def test_too_few_files_each_worker_keeps_its_records_with_a_warning(tmp_path):
    files = _write_shards(tmp_path, 1, records_per_file=6)
    with pytest.warns(UserWarning) as caught:
        shares = [_share(files, 2, i) for i in range(2)]
    message = str(caught[0].message)
    assert "data/ has 1 file(s) for 2 workers" in message
    assert "--num-shards 2" in message and "create-pretraining-data" in message
    assert shares == [["f0r0", "f0r2", "f0r4"], ["f0r1", "f0r3", "f0r5"]]  # disjoint, all records


def test_one_worker_and_in_memory_data_stay_quiet(tmp_path):
    files = _write_shards(tmp_path, 1)
    dataset = tf.data.Dataset.range(6)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert shard_across_workers(dataset, 1, files) is dataset
        in_memory = shard_across_workers(dataset, 2)
    assert in_memory.options().experimental_distribute.auto_shard_policy == AutoShardPolicy.DATA
    assert list(input_ops.auto_shard_dataset(in_memory, 2, 1).as_numpy_iterator()) == [1, 3, 5]
