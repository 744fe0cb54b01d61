"""`kbert embed` and `kbert index` on a real `kbert export` of a bare encoder (its `mean_embedding` output)."""

from __future__ import annotations

import numpy as np
import pytest

import kbert
import kbert.file_io as file_io
from kbert.cli.main import main

TEXTS = ["the cat sat on the mat", "a good dog ran", "the bad cat", "dog sat", "a cat ran on a mat !",
         "unaffable dogs", "the mat", "good , bad ?"]


@pytest.fixture(scope="module")
def encoder_export(tmp_path_factory):
    import keras

    from tests.conftest import TINY_VOCAB

    keras.utils.set_random_seed(0)
    encoder = kbert.BertEncoder(vocab_size=len(TINY_VOCAB), hidden_size=16, num_hidden_layers=2,
                                num_attention_heads=2, intermediate_size=32, max_position_embeddings=32)
    root = tmp_path_factory.mktemp("encoder")
    kbert.save_pretrained(encoder, root / "ckpt", vocabulary=list(TINY_VOCAB))
    assert main(["export", str(root / "ckpt"), "--out", str(root / "export"), "--sequence-length", "16"]) == 0
    return str(root / "export")


@pytest.mark.slow
def test_embed_and_search_with_a_kbert_export(beam_or_none, encoder_export, ram_root, capsys):
    import tensorflow as tf

    file_io.write_text(f"{ram_root}/in/a.tsv", "id\ttext\n" + "".join(f"t{i}\t{t}\n" for i, t in enumerate(TEXTS)))
    argv = ["embed", encoder_export, "--input", f"{ram_root}/in/*.tsv", "--batch-size", "3"]
    fn = tf.saved_model.load(encoder_export).signatures["serving_default"]
    if "embedding" not in fn.structured_outputs:  # an encoder export without the `embedding` output names the others
        assert main([*argv, "--out", f"{ram_root}/x"]) == 1
        assert "has no output 'embedding'" in capsys.readouterr().err
    assert main([*argv, "--out", f"{ram_root}/one", "--output-name", "mean_embedding"]) == 0
    ids, vectors = kbert.load_embeddings(f"{ram_root}/one")
    expected = fn(text=tf.constant([TEXTS[int(i[1:])] for i in ids]))["mean_embedding"].numpy()
    np.testing.assert_allclose(vectors, expected, atol=1e-5)
    if beam_or_none is not None:
        assert main([*argv, "--out", f"{ram_root}/beam", "--output-name", "mean_embedding", "--beam",
                     "--direct_num_workers=2", "--direct_running_mode=in_memory"]) == 0
        beam_ids, beam_vectors = kbert.load_embeddings(f"{ram_root}/beam")
        assert beam_ids == ids
        np.testing.assert_allclose(beam_vectors, vectors, atol=1e-5)
    # The index's output name and model default to the manifest's.
    assert main(["index", f"{ram_root}/one", "--out", f"{ram_root}/index", "--top-k", "2"]) == 0
    got = tf.saved_model.load(f"{ram_root}/index").signatures["serving_default"](text=tf.constant(TEXTS))
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    queries = fn(text=tf.constant(TEXTS))["mean_embedding"].numpy()
    best = (queries / np.linalg.norm(queries, axis=1, keepdims=True) @ unit.T).argmax(axis=1)
    assert [i.decode() for i in got["ids"].numpy()[:, 0]] == [ids[b] for b in best]
    assert [i.decode() for i in got["ids"].numpy()[:, 0]] == [f"t{i}" for i in range(len(TEXTS))]  # itself


@pytest.fixture
def beam_or_none():
    try:
        import apache_beam
    except ImportError:
        return None
    return apache_beam
