"""benchmarks/studies/mlm_ceiling.py: its torch masker is kbert's DynamicMasker, and its export feeds a training run."""

import argparse
import json

import numpy as np
import pytest
import tensorflow as tf
import torch

from benchmarks.studies.mlm_ceiling import export, main, mask_whole_words, phase_spec
from conftest import TINY_VOCAB
from kbert.pretraining_data import DynamicMasker
from kbert.pretraining_data.static_masking import continuation_flags, special_token_ids


def _features(seed: int, batch: int = 6, seq: int = 24):
    """Rows of `[CLS] words [SEP]` with padding, continuation pieces and word starts that group pieces."""
    rng = np.random.default_rng(seed)
    ids = rng.integers(5, len(TINY_VOCAB), size=(batch, seq))
    lengths = rng.integers(4, seq + 1, size=batch)
    valid = np.arange(seq)[None, :] < lengths[:, None]
    ids[:, 0] = 2
    ids[np.arange(batch), lengths - 1] = 3
    ids[~valid] = 0
    word_starts = rng.random((batch, seq)) < 0.6  # jieba's words: several characters to a word
    return {"token_ids": tf.constant(ids, tf.int32), "segment_ids": tf.zeros((batch, seq), tf.int32),
            "padding_mask": tf.constant(valid), "word_starts": tf.constant(word_starts),
            "next_sentence_label": tf.zeros([batch], tf.int32)}


@pytest.mark.parametrize("whole_word", [True, False])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_torch_masker_gives_dynamic_maskers_output_from_the_same_draws(whole_word, seed):
    masker = DynamicMasker(TINY_VOCAB, max_predictions_per_seq=4, masked_lm_prob=0.15, whole_word_masking=whole_word)
    features = _features(seed)
    stateless_seed = tf.constant([seed, 7], tf.int64)
    expected = masker(features, stateless_seed)
    # The draws DynamicMasker makes from that seed, handed to the port.
    seeds = tf.random.experimental.stateless_split(stateless_seed, 3)
    shape = tf.shape(features["token_ids"])
    special = np.zeros(len(TINY_VOCAB), bool)
    special[special_token_ids(TINY_VOCAB)] = True
    got = mask_whole_words(
        torch.from_numpy(features["token_ids"].numpy().astype(np.int64)),
        torch.from_numpy(features["padding_mask"].numpy()), torch.from_numpy(features["word_starts"].numpy()),
        torch.from_numpy(special), torch.from_numpy(continuation_flags(TINY_VOCAB)),
        max_predictions=4, masked_lm_prob=0.15, mask_id=4,
        noise=torch.from_numpy(tf.random.stateless_uniform(shape, seeds[0]).numpy()),
        draw=torch.from_numpy(tf.random.stateless_uniform(shape, seeds[1]).numpy()),
        random_ids=torch.from_numpy(tf.random.stateless_uniform(shape, seeds[2], 0, len(TINY_VOCAB), tf.int32)
                                    .numpy().astype(np.int64)),
        whole_word=whole_word)
    assert expected["masked_weights"].numpy().sum() > 0
    for name in ("token_ids", "masked_positions", "masked_ids", "masked_weights"):
        np.testing.assert_array_equal(got[name].numpy(), expected[name].numpy(), err_msg=name)


def _corpus_and_data(tmp_path, vocab_file, masking: str):
    from kbert.pretraining_data import CreatePretrainingDataConfig, create_pretraining_data

    corpus = tmp_path / "corpus.txt"
    sentences = ["the cat sat on the mat .", "a good dog ran .", "the dogs ran on the mat !", "a bad cat sat ."]
    corpus.write_text("\n\n".join(" ".join(sentences[(i + j) % 4] for j in range(3)) for i in range(40)) + "\n")
    create_pretraining_data(CreatePretrainingDataConfig(
        input=[str(corpus)], vocab=str(vocab_file), out=str(tmp_path / "data"), sequence_length=16,
        objective="none", masking=masking, whole_word_masking=True, dupe_factor=2, layout="paragraphs"))
    return corpus


def test_export_refuses_static_masks_naming_the_directory(tmp_path, tiny_vocab_file):
    corpus = _corpus_and_data(tmp_path, tiny_vocab_file, "static")
    with pytest.raises(ValueError, match="dynamic masks, not static"):
        export(str(tmp_path / "data"), str(corpus), str(tmp_path / "d.npz"))


def test_export_then_train_scores_the_heldout_set_kbert_builds(tmp_path, tiny_vocab_file):
    corpus = _corpus_and_data(tmp_path, tiny_vocab_file, "dynamic")
    counts = export(str(tmp_path / "data"), str(corpus), str(tmp_path / "d.npz"), max_heldout=8)
    with np.load(tmp_path / "d.npz") as npz:
        assert npz["token_ids"].shape == (counts["instances"], 16)
        assert npz["heldout_token_ids"].shape == (8, 16) and npz["heldout_masked_weights"].sum() >= 8
        assert (npz["heldout_token_ids"] == 4).any()  # masked: [MASK] stands in the held-out inputs
    main(["train", "--phase", f"{tmp_path / 'd.npz'}:30:8:1e-2:5", "--layers", "1", "--hidden", "16",
          "--eval-every", "15", "--device", "cpu", "--out", str(tmp_path / "curve.json")])
    curve = json.loads((tmp_path / "curve.json").read_text())["curve"]
    assert [c["step"] for c in curve] == [15, 30]
    assert all(0 <= c["heldout_mlm_accuracy"] <= 1 for c in curve)


def test_phase_spec_reads_steps_or_minutes_and_names_a_bad_one():
    assert phase_spec("d/x.npz:100:64:1e-3:10") == ("d/x.npz", "100", 64, 1e-3, 10)
    assert phase_spec("x.npz:2.5m:32:5e-4:0")[1] == "2.5m"
    with pytest.raises(argparse.ArgumentTypeError, match="FILE:STEPS:BATCH"):
        phase_spec("x.npz:100:64")
    with pytest.raises(argparse.ArgumentTypeError, match="'x.npz:ten:64:1e-3:0'"):
        phase_spec("x.npz:ten:64:1e-3:0")
