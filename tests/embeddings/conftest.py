"""A stand-in strings-in export for the embedding tests: a hash of each text's bytes, no weights to learn.

`serving_default(text)` returns `embedding` (L2-normalised), `mean_embedding` (the same, unnormalised) and
`pooled_output` (batch, 3): each text's bytes and byte pairs hashed into `DIM` buckets and counted. It is
deterministic, depends on the text alone (not the batch), and is saved with `tf.saved_model.save`, as a
`kbert export` is, so the code under test loads it the way it loads a real export.
"""

from __future__ import annotations

import uuid

import pytest

DIM = 16


def save_standin_export(path: str, dim: int = DIM) -> str:
    import tensorflow as tf

    class HashEmbedder(tf.Module):
        @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="text")])
        def serving_default(self, text):
            chars = tf.strings.bytes_split(text)
            grams = tf.concat([chars, tf.strings.ngrams(chars, 2, separator="")], axis=1)
            buckets = tf.strings.to_hash_bucket_fast(grams, dim)
            counts = tf.reduce_sum(tf.ragged.map_flat_values(tf.one_hot, buckets, dim), axis=1)
            counts = tf.ensure_shape(counts + 0.01, [None, dim])
            return {"embedding": tf.math.l2_normalize(counts, axis=1), "mean_embedding": counts,
                    "pooled_output": counts[:, :3]}

    module = HashEmbedder()
    tf.saved_model.save(module, path, signatures={"serving_default": module.serving_default})
    return path


@pytest.fixture(scope="session")
def standin_export(tmp_path_factory) -> str:
    """A local stand-in export directory."""
    return save_standin_export(str(tmp_path_factory.mktemp("standin") / "export"))


@pytest.fixture
def ram_root() -> str:
    return f"ram://kbert-embed-{uuid.uuid4().hex[:8]}"
