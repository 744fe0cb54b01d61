"""The stand-in export, the corpus and the checks that the embedding tests share.

The stand-in strings-in export hashes each text's bytes; it has no weights to learn.
`serving_default(text)` returns `embedding` (L2-normalised), `mean_embedding` (the same, unnormalised) and
`pooled_output` (batch, 3): each text's bytes and byte pairs hashed into `DIM` buckets and counted. It is
deterministic, depends on the text alone (not the batch), and is saved with `tf.saved_model.save`, as a
`kbert export` is, so the code under test loads it the way it loads a real export.
"""

from __future__ import annotations

import json

import numpy as np

import kbert.file_io as file_io

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


WORDS = ["cat", "dog", "sat", "ran", "mat", "good", "bad", "red", "blue", "small", "big", "fast"]


def write_corpus(root: str, rows: int = 90) -> dict[str, str]:
    """A JSONL and a CSV file under `root`, with one of each problem; returns {id: text} of the rows kept."""
    rng = np.random.default_rng(0)
    texts = [" ".join(rng.choice(WORDS, size=rng.integers(2, 9))) + f" {i}" for i in range(rows)]
    lines = [json.dumps({"id": f"j{i}", "text": t}).encode() for i, t in enumerate(texts)]
    lines[3] = b'{"id": "j3", "text": "  "}'                  # empty text
    lines[4] = json.dumps({"text": texts[4]}).encode()      # missing id
    lines[5] = b'{"id": "j5", "text": "caf\xe9"}'             # Latin-1, not UTF-8
    lines[6] = json.dumps({"id": "j0", "text": "again"}).encode()  # duplicate of the first row
    file_io.write_bytes(f"{root}/in/a.jsonl", b"\n".join(lines) + b"\n")
    csv = "id,text\n" + "".join(f"c{i},{t}\n" for i, t in enumerate(texts[:20])) + "j1,a duplicate across files\n"
    file_io.write_text(f"{root}/in/b.csv", csv)
    kept = {f"j{i}": t for i, t in enumerate(texts) if i not in (3, 4, 5, 6)}
    kept.update({f"c{i}": t for i, t in enumerate(texts[:20])})
    return kept


def reference(export: str, texts: list[str], output: str = "embedding") -> np.ndarray:
    """The export's signature called directly, one text at a time."""
    import tensorflow as tf

    fn = tf.saved_model.load(export).signatures["serving_default"]
    return np.concatenate([fn(text=tf.constant([t]))[output].numpy() for t in texts])


def shard_bytes(out: str) -> dict[str, bytes]:
    return {name: file_io.read_bytes(file_io.join(out, name)) for name in file_io.listdir(out)}
