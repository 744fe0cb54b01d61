"""Evaluation and serving decode predictions with the same code: on inputs both see alike, they agree."""

from __future__ import annotations

import pathlib
import sys

import tensorflow as tf

import kbert
from kbert.export import build_module
from kbert.tasks import get_task, task_from_info
from kbert.tasks.qa_features import build_qa_features
from kbert.tasks.span_decoding import decode_answers
from kbert.tasks.tagging_data import tagging_dataset
from kbert.tasks.word_decoding import word_predictions

sys.path.insert(0, str(pathlib.Path(__file__).parent))  # importlib mode: the helper beside us
import export_cases as cases  # noqa: E402

# Short enough that a question and its context fit one window of cases.SEQ tokens, as in serving.
QA = [("the cat ?", "a dog ran on the mat ."), ("who ran ?", "the dog ran , the cat sat"), ("?", "good")]
SENTENCES = ["the cats sat on the mat", "a dog ran", "unaffable dogs running good"]


def test_span_decoding_of_evaluation_equals_serving():
    source = cases.sources()["qa"]
    serving = build_module(source).serving_default(question=tf.constant([q for q, _ in QA]),
                                                   context=tf.constant([c for _, c in QA]))
    examples = [{"id": str(i), "question": q, "context": c, "answers": []} for i, (q, c) in enumerate(QA)]
    features = build_qa_features(examples, source.tokenizer, cases.SEQ, max_query_length=8)
    assert len(features) == len(QA)  # one window each, like the serving graph's packing
    logits = source.model(features.inputs(), training=False)
    answers, spans = decode_answers(examples, features, logits["start_logits"].numpy(),
                                    logits["end_logits"].numpy(), return_spans=True)
    for i, (_, context) in enumerate(QA):
        span = spans[str(i)]
        assert (span["char_start"], span["char_end"]) == (int(serving["start_char"][i]), int(serving["end_char"][i]))
        assert answers[str(i)] == serving["answer"][i].numpy().decode() == context[span["char_start"]:span["char_end"]]


def test_word_decoding_of_evaluation_equals_serving():
    source = cases.sources()["tag"]
    serving = build_module(source).serving_default(text=tf.constant(SENTENCES))
    examples = [{"words": s.split(), "tags": ["O"] * len(s.split())} for s in SENTENCES]
    preprocessor = kbert.BertPreprocessor(source.tokenizer, cases.SEQ)
    (inputs,) = list(tagging_dataset(examples, preprocessor, cases.TAG_LABELS, batch_size=8, with_labels=False,
                                     keep_word_ids=True))
    word_ids = inputs.pop("word_ids").numpy()
    predicted = word_predictions(source.model(inputs, training=False), word_ids, [len(e["words"]) for e in examples])
    for i, words in enumerate(predicted):
        count = int(serving["num_words"][i])
        assert count == len(words)
        assert serving["word_label_id"][i, :count].numpy().tolist() == words
    # The labels came from real argmaxes, not all one class.
    assert len({label for words in predicted for label in words}) > 1


def test_registry_round_trips_task_settings():
    task = get_task("qa", doc_stride=7, max_answer_length=5)
    again = task_from_info(task.info())
    assert again == task and again.info()["task"] == "qa"
    classify = get_task("classify", text_column=3, label_column=1, header=False)
    prepared = classify.prepare("train.tsv", [{"label": "b"}, {"label": "a"}])
    assert prepared.labels == ["a", "b"] and prepared.info()["header"] is False
    regress = classify.prepare("train.tsv", [{"label": "0.5"}, {"label": "2"}])
    assert regress.info()["task"] == "regress" and regress.labels is None
    assert tuple(regress.build_model(cases.encoder()).output.shape) == (None, 1)
