"""Training batches grouped by length (`kbert.data_pipeline.index_batches`): every example once an epoch,
the same number of steps, a new order every epoch, far less padding than random batches, and, given
strata (class labels), every stratum in each batch in its share, even where length follows the label."""

import numpy as np
import pytest
import tensorflow as tf

import kbert
from kbert.data_pipeline import index_batches, length_order
from kbert.tasks import ClassificationTask, QuestionAnsweringTask, TaggingTask
from kbert.tasks.qa_features import build_qa_features

WORDS = ["the", "cat", "sat", "on", "mat", "dog", "ran", "far"]
VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "?"] + WORDS


def _epochs(dataset, count=2):
    return [[b.numpy().tolist() for b in dataset] for _ in range(count)]


@pytest.mark.parametrize("lengths", [None, list(range(37, 0, -1))])
def test_every_example_once_an_epoch_in_a_new_order(lengths):
    batches = index_batches(37, 4, shuffle=True, seed=3, lengths=lengths)
    assert batches.cardinality().numpy() == 10
    first, second = _epochs(batches)
    for epoch in (first, second):
        assert sorted(i for batch in epoch for i in batch) == list(range(37))
        assert len(epoch) == 10 and sorted(len(b) for b in epoch)[1:] == [4] * 9
    assert first != second


def test_without_shuffle_the_order_is_kept_and_lengths_must_match():
    assert _epochs(index_batches(5, 2, lengths=[9, 1, 5, 3, 7]), 1)[0] == [[0, 1], [2, 3], [4]]
    with pytest.raises(ValueError, match="3 lengths for 5 examples"):
        index_batches(5, 2, lengths=[1, 2, 3])


def test_grouped_batches_hold_similar_lengths():
    lengths = np.random.default_rng(0).integers(1, 60, size=512)

    def padding(dataset):  # padded positions per row when each batch pads to its longest row
        batches = [lengths[b.numpy()] for b in dataset]
        return sum(b.max() * len(b) - b.sum() for b in batches) / len(lengths)

    grouped = padding(index_batches(512, 16, shuffle=True, seed=0, lengths=lengths, window=8))
    random = padding(index_batches(512, 16, shuffle=True, seed=0))
    assert grouped < random / 5


def test_strata_keep_their_shares_in_every_batch_where_length_follows_them():
    # Sorted by length alone, a run of these 8 cut into two batches gives one label each.
    strata, lengths = tf.constant([0, 1, 0, 1, 0, 1, 0, 1]), tf.constant([1, 10, 2, 11, 3, 12, 4, 13])
    run = tf.constant([5, 2, 7, 0, 3, 6, 1, 4])
    pure = length_order(run, lengths).numpy()
    assert pure.tolist() == [0, 2, 4, 6, 1, 3, 5, 7]
    mixed = length_order(run, lengths, (strata, 2)).numpy()
    assert mixed.tolist() == [0, 1, 2, 3, 4, 5, 6, 7]  # in each label's length order, the labels taking turns
    with pytest.raises(ValueError, match="2 strata for 8 examples"):
        index_batches(8, 4, shuffle=True, lengths=[1] * 8, strata=[0, 1])


def test_an_epoch_of_one_run_keeps_random_batches():
    # Sorting a whole epoch would give every seed the same batches; within one run the seed decides them.
    lengths = np.random.default_rng(0).integers(1, 60, size=64)
    for count, window, grouped in ((64, 4, False), (64, 2, True)):
        batches = _epochs(index_batches(count, 16, shuffle=True, seed=0, lengths=lengths, window=window), 1)[0]
        random = _epochs(index_batches(count, 16, shuffle=True, seed=0), 1)[0]
        assert (batches != random) == grouped
    seeds = [{frozenset(b) for b in _epochs(index_batches(64, 16, shuffle=True, seed=s, lengths=lengths,
                                                          window=4), 1)[0]} for s in (0, 1)]
    assert not seeds[0] & seeds[1]


def test_stratified_batches_still_pad_little():
    rng = np.random.default_rng(0)
    labels = rng.integers(0, 3, size=512)
    lengths = rng.integers(1, 60, size=512) + 8 * labels  # the label shifts the length, as in real pairs

    def measure(dataset):  # (padded positions per row, spread of label 0's share over the batches)
        batches = [b.numpy() for b in dataset]
        padding = sum(lengths[b].max() * len(b) - lengths[b].sum() for b in batches) / len(lengths)
        return padding, np.std([np.mean(labels[b] == 0) for b in batches])

    grouped = measure(index_batches(512, 16, shuffle=True, seed=0, lengths=lengths, window=8))
    stratified = measure(index_batches(512, 16, shuffle=True, seed=0, lengths=lengths, strata=labels, window=8))
    random = measure(index_batches(512, 16, shuffle=True, seed=0))
    assert stratified[0] < random[0] / 2 and grouped[0] < stratified[0]
    assert stratified[1] < random[1] < grouped[1]


def _sentences(count):  # 512 rows in batches of 16 take two runs of 16 batches, so the pipelines group
    rng = np.random.default_rng(1)
    return [" ".join(rng.choice(WORDS, size=int(n))) for n in rng.integers(1, 30, size=count)]


def test_task_pipelines_group_by_token_count():
    tokenizer = kbert.BertTokenizer(VOCAB)
    pre = kbert.BertPreprocessor(tokenizer, sequence_length=40, padding="dynamic")
    texts = _sentences(512)
    classification = ClassificationTask(labels=["0", "1"])
    tagging = TaggingTask(labels=["O", "B"])
    cases = [
        (classification, [{"text": t, "text_pair": None, "label": str(i % 2)} for i, t in enumerate(texts)]),
        (tagging, [{"words": t.split(), "tags": ["O"] * len(t.split())} for t in texts]),
    ]
    for task, examples in cases:
        widths = {}
        for grouped in (False, True):
            data = task.dataset(examples, pre, 16, training=True, seed=0, group_by_length=grouped)
            batches = list(data.dataset)
            assert len(batches) == 32
            padded = sum(int(np.size(x["padding_mask"])) for x, _ in batches)
            real = sum(int(np.sum(x["padding_mask"])) for x, _ in batches)
            assert real == sum(len(t.split()) for t in texts) + 2 * len(texts)  # every row once
            widths[grouped] = padded / len(texts)
        assert widths[True] < 0.75 * widths[False], (task.name, widths)


def test_classification_batches_mix_labels_that_follow_length():
    tokenizer = kbert.BertTokenizer(VOCAB)
    pre = kbert.BertPreprocessor(tokenizer, sequence_length=40, padding="dynamic")
    texts = _sentences(512)
    examples = [{"text": t, "text_pair": None, "label": str(int(len(t.split()) > 15))} for t in texts]
    data = ClassificationTask(labels=["0", "1"]).dataset(examples, pre, 16, training=True, seed=0)
    shares = [float(np.mean(y)) for _, y in data.dataset if len(y) == 16]
    overall = np.mean([e["label"] == "1" for e in examples])
    assert max(abs(share - overall) for share in shares) <= 0.15, shares


def test_question_answering_batches_are_cut_to_their_longest_window():
    tokenizer = kbert.BertTokenizer(VOCAB)
    contexts = _sentences(24)
    examples = [{"id": str(i), "question": "the cat ?", "context": c,
                 "answers": [{"text": c.split()[0], "answer_start": 0}]} for i, c in enumerate(contexts)]
    features = build_qa_features(examples, tokenizer, sequence_length=24, doc_stride=8, max_query_length=8)
    full = features.inputs()
    seen = []
    for (x, y), index in zip(features.dataset(4, shuffle=True, seed=0, pad_multiple=1),
                             index_batches(len(features), 4, shuffle=True, seed=0,
                                           lengths=features.padding_mask.sum(-1))):
        rows = index.numpy()
        width = int(features.padding_mask[rows].sum(-1).max())
        assert x["token_ids"].shape == (len(rows), width)
        np.testing.assert_array_equal(x["token_ids"], full["token_ids"][rows, :width])
        np.testing.assert_array_equal(y["start_logits"], features.start_positions[rows])
        seen.extend(rows.tolist())
    assert sorted(seen) == list(range(len(features)))
    fixed = next(iter(features.dataset(4, dynamic_padding=False, with_labels=False)))
    assert fixed["token_ids"].shape == (4, 24)
