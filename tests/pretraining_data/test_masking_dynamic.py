"""DynamicMasker inside tf.data: exact cases, statistics, whole words, fresh masks per epoch, same spec."""

import random

import numpy as np
import pytest
import tensorflow as tf

from pretraining_data.masking_cases import CLS, MASK, PAD, SEP, UNK, VOCAB, sequence, word_spans
from kbert.pretraining_data.dynamic_masking import DynamicMasker, pretraining_feature_spec, split_features_labels
from kbert.pretraining_data.create_config import CreatePretrainingDataConfig
from kbert.pretraining_data.text_dataset import text_pretraining_dataset
from kbert.pretraining_data.static_masking import MissingMaskTokenError

SEQ = 64


def batch_of(sequences, word_starts=None):
    n = len(sequences)
    ids = np.zeros([n, SEQ], np.int32)
    for i, s in enumerate(sequences):
        ids[i, : len(s)] = s
    features = {"token_ids": tf.constant(ids), "segment_ids": tf.zeros([n, SEQ], tf.int32),
                "padding_mask": tf.constant(ids != PAD), "next_sentence_label": tf.zeros([n], tf.int32)}
    if word_starts is not None:
        features["word_starts"] = tf.constant(word_starts)
    return features


def test_mask_everything_deterministically_and_unbatched():
    masker = DynamicMasker(VOCAB, 8, masked_lm_prob=1.0, mask_token_rate=1.0, random_token_rate=0.0)
    out = masker(batch_of([[CLS, 7, 8, SEP, 9, UNK, SEP]]), tf.constant([1, 2]))
    assert out["token_ids"].numpy()[0, :8].tolist() == [CLS, MASK, MASK, SEP, MASK, UNK, SEP, PAD]
    assert out["masked_positions"].numpy()[0].tolist() == [1, 2, 4, 0, 0, 0, 0, 0]
    assert out["masked_ids"].numpy()[0].tolist() == [7, 8, 9, 0, 0, 0, 0, 0]
    assert out["masked_weights"].numpy()[0].tolist() == [1, 1, 1, 0, 0, 0, 0, 0]
    single = {k: v[0] for k, v in batch_of([[CLS, 7, 8, SEP]]).items()}
    one = masker(single, tf.constant([3, 4]))
    assert one["token_ids"].numpy()[:4].tolist() == [CLS, MASK, MASK, SEP] and one["masked_ids"].shape == [8]


def test_statistics_15_percent_80_10_10_never_special_never_padding():
    rng = random.Random(0)
    sequences = [sequence(rng, rng.choice([40, 64])) for _ in range(2000)]
    masker = DynamicMasker(VOCAB, 20, seed=0)
    features = batch_of(sequences)
    out = {k: v.numpy() for k, v in masker(features, tf.constant([5, 6])).items()}
    ids = features["token_ids"].numpy()
    weights = out["masked_weights"]
    lengths = (ids != PAD).sum(1)
    np.testing.assert_array_equal(weights.sum(1), np.round(lengths * 0.15))  # budget: round(15% of length)
    rows, cols = np.nonzero(weights)
    positions = out["masked_positions"][rows, cols]
    original = ids[rows, positions]
    np.testing.assert_array_equal(out["masked_ids"][rows, cols], original)
    assert not np.isin(original, [PAD, CLS, SEP, UNK, MASK]).any()
    new = out["token_ids"][rows, positions]
    assert (new == MASK).mean() == pytest.approx(0.8, abs=0.015)
    assert (new == original).mean() == pytest.approx(0.1, abs=0.012)
    changed = np.zeros_like(ids, bool)
    changed[rows, positions] = True
    np.testing.assert_array_equal(out["token_ids"][~changed], ids[~changed])  # nothing else moves
    assert (np.diff(out["masked_positions"], axis=1)[weights[:, 1:] > 0] > 0).all()  # ascending


def test_whole_word_masking_with_pieces_and_word_starts():
    rng = random.Random(1)
    sequences = [sequence(rng, 60, pieces=True) for _ in range(600)]
    starts = np.ones([600, SEQ], bool)
    starts[:, 10:13] = [True, False, False]  # a segmenter word over positions 10-12 in every row
    masker = DynamicMasker(VOCAB, 20, whole_word_masking=True, seed=1)
    out = masker(batch_of(sequences, starts), tf.constant([7, 8]))
    multi = chosen = tokens = 0
    for i, ids in enumerate(sequences):
        positions = set(out["masked_positions"].numpy()[i][out["masked_weights"].numpy()[i] > 0].tolist())
        for span in word_spans(ids, starts[i]):
            assert positions.issuperset(span) or positions.isdisjoint(span)
            multi += len(span) > 1 and positions.issuperset(span)
        chosen, tokens = chosen + len(positions), tokens + len(ids)
    assert multi > 100 and 0.13 <= chosen / tokens <= 0.151


def test_masks_are_fresh_every_epoch_and_reproducible():
    tf.random.set_seed(0)  # stateful random ops would repeat the same masks on every epoch here
    rng = random.Random(2)
    data = batch_of([sequence(rng, 50) for _ in range(16)])
    dataset = tf.data.Dataset.from_tensor_slices(data).batch(8)

    def epoch(ds):
        return np.concatenate([b["masked_positions"].numpy() for b in ds])

    masked = DynamicMasker(VOCAB, 10, seed=3).apply(dataset)
    first, second = epoch(masked), epoch(masked)
    assert (first != second).any()
    np.testing.assert_array_equal(first, epoch(DynamicMasker(VOCAB, 10, seed=3).apply(dataset)))


def test_static_and_dynamic_pipelines_share_one_feature_spec(tiny_vocab_file, tmp_path):
    from kbert.pretraining_data.tfrecords import load_pretraining_dataset, static_features, write_pretraining_tfrecords
    from kbert.pretraining_data.instances import PretrainingInstance
    from kbert.pretraining_data.static_masking import StaticMasker

    vocab = tiny_vocab_file.read_text().split()
    instance = PretrainingInstance([2, 5, 6, 3, 7, 3], [0, 0, 0, 0, 1, 1], 1, [True] * 6)
    write_pretraining_tfrecords([static_features(instance, StaticMasker(vocab, 0.15, 3), 16, 3)] * 4,
                                tmp_path / "static", vocab_file=tiny_vocab_file,
                                settings={"masking": "static", "sequence_length": 16, "max_predictions_per_seq": 3})
    static = load_pretraining_dataset(tmp_path / "static", 2)
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("the cat sat on the mat .\nthe dog ran .\n\na good cat !\nthe bad dog sat .\n")
    from kbert.text.bert_tokenizer import BertTokenizer
    config = CreatePretrainingDataConfig(input=[str(corpus)], sequence_length=16, max_predictions_per_seq=3,
                                         dupe_factor=1, seed=0)
    dynamic = text_pretraining_dataset(config, BertTokenizer(str(tiny_vocab_file)), batch_size=2)
    expected = pretraining_feature_spec(16, 3, (2,))
    assert static.element_spec == expected and dynamic.element_spec == expected
    batch = next(iter(dynamic))
    assert batch["token_ids"].shape == [2, 16] and set(batch["next_sentence_label"].numpy()) <= {0, 1}
    x, y, w = split_features_labels(batch)
    assert set(x) == {"token_ids", "segment_ids", "padding_mask", "masked_positions"}
    assert y["mlm"] is batch["masked_ids"] and w["mlm"] is batch["masked_weights"]


def test_vocab_without_mask_is_a_named_error():
    with pytest.raises(MissingMaskTokenError, match=r"\[MASK\]"):
        DynamicMasker([t for t in VOCAB if t != "[MASK]"], 5)
