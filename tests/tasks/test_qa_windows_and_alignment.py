"""QA windowing and decoding on a long context, and NER label alignment, against hand-computed values."""

import numpy as np
import pytest
import tensorflow as tf

import kbert
from kbert.constants import IGNORE_LABEL
from kbert.tasks.qa_features import build_qa_features
from kbert.tasks.span_decoding import decode_answers
from kbert.tasks.tagging_data import align_word_labels, tagging_dataset
from kbert.tasks.word_decoding import word_predictions
from tests.conftest import TINY_VOCAB

# Words outside the tiny vocabulary ("Zürich", "Bob") become one [UNK] spanning the whole word.
CONTEXT = " ".join(["The cat sat on the mat."] * 6) + "  Zürich, Bob ran!  " + " ".join(["A dog ran."] * 6)
ANSWER = "Zürich, Bob ran"


@pytest.fixture
def tokenizer():
    return kbert.BertTokenizer(TINY_VOCAB)


def qa_example():
    return {"id": "q1", "question": "the dog ?", "context": CONTEXT,
            "answers": [{"text": ANSWER, "answer_start": CONTEXT.index(ANSWER)}]}


def test_windows_cover_the_context_with_stride(tokenizer):
    features = build_qa_features([qa_example()], tokenizer, sequence_length=16, doc_stride=5,
                                 max_query_length=2)
    ids, _, _ = tokenizer.tokenize_with_offsets(CONTEXT)
    n = len(ids.numpy())
    # Question cut to 2 tokens, so each window holds 16 - 2 - 3 = 11 context tokens; starts 0, 5, 10, ...
    window = 11
    expected_starts = list(range(0, n - window + 5, 5))
    expected_starts = [s for s in expected_starts if s == 0 or s - 5 + window < n]
    assert len(features) == len(expected_starts)
    assert features.token_ids[0, :4].tolist() == [2, 5, 10, 3]  # [CLS] the dog [SEP] ("?" cut)
    for w, start in enumerate(expected_starts):
        length = min(window, n - start)
        context_positions = np.nonzero(features.char_starts[w] >= 0)[0]
        assert context_positions.tolist() == list(range(4, 4 + length))
        assert features.token_ids[w, 4:4 + length].tolist() == ids.numpy()[start:start + length].tolist()
        assert features.token_ids[w, 4 + length] == 3 and features.padding_mask[w].sum() == 5 + length
        assert features.segment_ids[w].tolist() == [0] * 4 + [1] * (length + 1) + [0] * (11 - length)
    # Every context token is "max context" in exactly one window.
    per_token = {}
    for w, start in enumerate(expected_starts):
        for p in np.nonzero(features.max_context[w])[0]:
            per_token.setdefault(start + p - 4, []).append(w)
    assert sorted(per_token) == list(range(n)) and all(len(v) == 1 for v in per_token.values())


def test_answer_positions_recover_exact_text_and_offsets(tokenizer):
    features = build_qa_features([qa_example()], tokenizer, sequence_length=16, doc_stride=5,
                                 max_query_length=2)
    begin = CONTEXT.index(ANSWER)
    holding = np.nonzero(features.start_positions)[0]
    assert len(holding) >= 1
    for w in range(len(features)):
        s, e = features.start_positions[w], features.end_positions[w]
        if w not in holding:
            assert s == e == 0  # [CLS]: the answer is not (wholly) inside this window
            continue
        assert features.char_starts[w, s] == begin and features.char_ends[w, e] == begin + len(ANSWER)
        assert CONTEXT[features.char_starts[w, s]:features.char_ends[w, e]] == ANSWER
    # Decoding oracle logits (the gold span highest in every window that holds it) gives back the exact
    # text, from the window where its start token has the most context.
    start = np.zeros(features.token_ids.shape, np.float32)
    end = np.zeros_like(start)
    start[holding, features.start_positions[holding]] = 10.0
    end[holding, features.end_positions[holding]] = 10.0
    answers, spans = decode_answers([qa_example()], features, start, end, return_spans=True)
    assert answers == {"q1": ANSWER}
    assert spans["q1"]["char_start"] == begin and spans["q1"]["char_end"] == begin + len(ANSWER)


def test_decoding_rules(tokenizer):
    context = "the cat sat on the mat"
    example = {"id": "a", "question": "?", "context": context, "answers": []}
    features = build_qa_features([example], tokenizer, sequence_length=12, doc_stride=4)
    # [CLS] ? [SEP] the cat sat on the mat [SEP]: context tokens at positions 3..8.
    start = np.full((1, 12), -10.0, np.float32)
    end = np.full((1, 12), -10.0, np.float32)
    start[0, 1], end[0, 1] = 50.0, 50.0     # the question token: never an answer
    start[0, 8], end[0, 3] = 9.0, 9.0       # "mat" ... "the": end before start, rejected
    start[0, 4], end[0, 7] = 5.0, 5.0       # "cat sat on the" (4 tokens)
    assert decode_answers([example], features, start, end) == {"a": "cat sat on the"}
    assert decode_answers([example], features, start, end, max_answer_length=3)["a"] != "cat sat on the"
    # SQuAD 2.0: [CLS] scores 2 * 6 = 12 > 10 for the best span, so no answer above a threshold of 0...
    start[0, 0], end[0, 0] = 6.0, 6.0
    assert decode_answers([example], features, start, end, version_2_with_negative=True) == {"a": ""}
    # ...but the span wins when the threshold allows a difference of 2 or more.
    assert decode_answers([example], features, start, end, version_2_with_negative=True,
                          null_score_diff_threshold=2.5) == {"a": "cat sat on the"}


def test_ner_labels_sit_on_first_pieces(tokenizer):
    pre = kbert.BertPreprocessor(tokenizer, sequence_length=10)
    words = tf.ragged.constant([["The", "unaffable", "cats", "sat"], ["dogs"]])
    tags = tf.ragged.constant([[0, 1, 2, 0], [2]])
    out = align_word_labels(pre, words, tags)
    # the | un ##aff ##able | cat ##s | sat
    assert out["token_ids"].numpy()[0].tolist() == [2, 5, 21, 22, 23, 6, 12, 7, 3, 0]
    x = IGNORE_LABEL
    assert out["labels"].numpy().tolist() == [[x, 0, 1, x, x, 2, x, 0, x, x], [x, 2, x, x, x, x, x, x, x, x]]
    assert out["word_ids"].numpy()[0].tolist() == [-1, 0, 1, 1, 1, 2, 2, 3, -1, -1]
    # Truncation keeps labels with their pieces; the cut word is predicted as the default tag.
    short = align_word_labels(kbert.BertPreprocessor(tokenizer, sequence_length=5), words, tags)
    assert short["labels"].numpy()[0].tolist() == [x, 0, 1, x, x]
    logits = np.eye(3)[[0, 0, 1, 2, 2]] * 5
    assert word_predictions(logits, short["word_ids"].numpy()[0], [4], default=0) == [[0, 1, 0, 0]]
    # A batch: the full-length first sentence and the one-word second, each word read at its first piece.
    full = np.eye(3)[out["token_ids"].numpy() % 3] * 5
    expected = [[int(full[0, i].argmax()) for i in (1, 2, 5, 7)], [int(full[1, 1].argmax())]]
    assert word_predictions(full, out["word_ids"].numpy(), [4, 1], default=0) == expected


def test_tagging_dataset_dynamic_padding_and_unknown_tag(tokenizer):
    pre = kbert.BertPreprocessor(tokenizer, sequence_length=64, padding="dynamic")
    examples = [{"words": ["the", "cats"], "tags": ["O", "B-ANI"]}, {"words": ["dog"], "tags": ["B-ANI"]}]
    (x, y), = list(tagging_dataset(examples, pre, ["B-ANI", "O"], batch_size=2, pad_multiple=1))
    assert x["token_ids"].shape == (2, 5)  # the longest row: [CLS] the cat ##s [SEP]
    assert y.numpy().tolist() == [[-100, 1, 0, -100, -100], [-100, 0, -100, -100, -100]]
    (x, y), = list(tagging_dataset(examples, pre, ["B-ANI", "O"], batch_size=2, pad_multiple=16))
    assert x["token_ids"].shape == (2, 16)  # rounded up to a multiple of 16, the padding ignored
    assert y.numpy()[0, :6].tolist() == [-100, 1, 0, -100, -100, -100]
    with pytest.raises(ValueError, match="sentence 0: tag 'B-ANI'"):
        tagging_dataset(examples, pre, ["O", "B-X"])
