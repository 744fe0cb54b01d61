"""Serving answers as evaluation does, for every family's tokenizer and every task, whatever a model learns.

A stand-in task model (`PieceLogits`) gives each piece logits from seeded tables of its id and its position,
so the labels, tags and spans depend only on what the two paths make of the strings: pieces and their
character offsets, packing, and decoding. The serving graph (`ServingModule.serving_default`, strings in) and
evaluation (the task's `dataset`, the model, then the task's decoding) must agree exactly on held-out texts with
trailing and repeated white space, punctuation, accents, CJK and emoji at the edges of words and spans.
"""

from __future__ import annotations

import random

import keras
import numpy as np
import pytest
import tensorflow as tf

import kbert
from kbert.export.serving_module import ServingModule
from kbert.tasks import ClassificationTask, QuestionAnsweringTask, TaggingTask
from kbert.tasks.span_decoding import decode_answers
from kbert.tasks.word_decoding import word_predictions
from kbert.text.sentencepiece_tokenizer import SentencePieceTokenizer
from kbert.text.sentencepiece_vocabulary import learn_sentencepiece
from tests.conftest import TINY_VOCAB
from tests.family_checkpoints import bpe_files
from tests.training.conftest import keyword_rows

SEQ = 64
LABELS = ["neg", "neu", "pos"]
TAGS = ["O", "B-ANI", "I-ANI", "B-OBJ", "I-OBJ"]
# Words every family's tokenizer keeps whole (one word each, so that tagging's words are the text's words):
# accents, a CJK character, emoji (one with a skin-tone modifier: two code points), punctuation alone.
WORDS = ["the", "cat", "cats", "sat", "on", "mat", "dog", "ran", "good", "bad", "café", "Zoë", "naïve", "élan",
         "日", "🙂", "👍🏽", "!", ",", "?", ".", "running", "unaffable"]
# What may sit between words in a QA context: repeated spaces, a tab, punctuation and accents against words.
GLUE = [" "] * 6 + ["  ", " ! ", ", ", "! ", "é ", " é", "\t", "。", " 🙂 ", "日本"]
ENDS = ["", "", " ", "  ", " \t", "!", " é"]


def learned_from() -> list[str]:
    """The lines the tokenizers learn from: not the held-out texts below, and without some of their words."""
    return [text for text, _ in keyword_rows(64, 0)] + ["the café of Zoë , a naïve cat !", "日本 🙂 ran ."] * 4


def bert_tokenizer() -> kbert.BertTokenizer:
    return kbert.BertTokenizer(TINY_VOCAB + ["cafe", "zoe", "日", "本", "##e", "e"])


@pytest.fixture(scope="module")
def tokenizers(tmp_path_factory) -> dict:
    """BERT's WordPiece, ALBERT's SentencePiece and RoBERTa's byte-level BPE, each learned from `learned_from`."""
    root = tmp_path_factory.mktemp("tokenizers")
    corpus = root / "corpus.txt"
    corpus.write_text("\n".join(learned_from()) + "\n", encoding="utf-8")
    bpe = root / "bpe"
    bpe.mkdir()
    bpe_files(bpe, learned_from())
    return {"bert": bert_tokenizer(),
            "albert": SentencePieceTokenizer(learn_sentencepiece([corpus], size=80, verbose=False)),
            "roberta": kbert.ByteLevelBpeTokenizer(bpe / "vocab.json", bpe / "merges.txt")}


class PieceLogits(keras.Model):
    """A task model's outputs fixed by each piece's id and position (seeded tables; padding ignored).

    Args:
        vocabulary_size: int. Rows of the id table.
        task: str. "classify" (`(batch, labels)`, the pieces' mean), "tag" (`(batch, length, labels)`) or
            "qa" (`start_logits` and `end_logits`, `(batch, length)`).
        outputs: int. Labels (2 for "qa").
        seed: int. Seeds the tables.
    """

    def __init__(self, vocabulary_size: int, task: str, outputs: int, seed: int, **kwargs):
        super().__init__(**kwargs)
        rng = np.random.default_rng(seed)
        self.task = task
        self.by_id = tf.constant(rng.normal(size=(vocabulary_size, outputs)), tf.float32)
        self.by_position = tf.constant(rng.normal(size=(SEQ, outputs)), tf.float32)

    def call(self, inputs, training=False):
        ids = tf.cast(inputs["token_ids"], tf.int32)
        logits = tf.gather(self.by_id, ids) + self.by_position[tf.newaxis, :tf.shape(ids)[1]]
        if self.task == "qa":
            return {"start_logits": logits[..., 0], "end_logits": logits[..., 1]}
        if self.task == "classify":
            mask = tf.cast(inputs["padding_mask"], tf.float32)[..., tf.newaxis]
            return tf.reduce_sum(logits * mask, axis=1) / tf.reduce_sum(mask, axis=1)
        return logits


def held_out(seed: int, count: int) -> list[str]:
    """`count` texts of 1-6 words from `WORDS`, joined by any of `GLUE` and ended by any of `ENDS`."""
    rng = random.Random(seed)
    texts = []
    for _ in range(count):
        words = rng.choices(WORDS, k=rng.randint(1, 6))
        text = words[0] + "".join(rng.choice(GLUE) + w for w in words[1:])
        texts.append(text + rng.choice(ENDS))
    return texts


def model_outputs(model: keras.Model, dataset: tf.data.Dataset, keep: str | None = None) -> list:
    """`(model outputs, the inputs' `keep` feature)` of each batch, as evaluation runs them."""
    batches = []
    for inputs in dataset:
        kept = inputs.pop(keep).numpy() if keep else None
        batches.append((tf.nest.map_structure(lambda t: t.numpy(), model(inputs, training=False)), kept))
    return batches


FAMILIES = ["bert", "albert", "roberta"]


@pytest.mark.parametrize("family", FAMILIES)
def test_classification_labels(tokenizers, family):
    tokenizer, texts = tokenizers[family], held_out(1, 48)
    model = PieceLogits(tokenizer.vocabulary_size(), "classify", len(LABELS), seed=1)
    task = ClassificationTask(labels=LABELS)
    served = ServingModule(model, tokenizer, task, SEQ).serving_default(text=tf.constant(texts))
    preprocessor = kbert.BertPreprocessor(tokenizer, SEQ, padding="dynamic")
    examples = [{"text": t, "text_pair": None, "label": LABELS[0]} for t in texts]
    logits = np.concatenate([y for y, _ in model_outputs(model, task.dataset(examples, preprocessor, 16,
                                                                             training=False).dataset)])
    assert served["label_id"].numpy().tolist() == np.argmax(logits, -1).tolist()
    np.testing.assert_allclose(served["probabilities"].numpy(), tf.nn.softmax(logits).numpy(), atol=1e-6)
    assert len(set(served["label_id"].numpy().tolist())) > 1


@pytest.mark.parametrize("family", FAMILIES)
def test_tagging_words_and_tags(tokenizers, family):
    """Words joined by one space (as evaluation's running text), then spaces or none at the end. (Not a tab or
    a newline: byte-level BPE's offsets keep those in a piece's span, and the tagging signature takes such a
    piece for a word of its own.)"""
    tokenizer, rng = tokenizers[family], random.Random(2)
    sentences = [rng.choices(WORDS, k=rng.randint(1, 8)) for _ in range(48)]
    texts = [" ".join(words) + rng.choice(["", " ", "  ", "   "]) for words in sentences]
    model = PieceLogits(tokenizer.vocabulary_size(), "tag", len(TAGS), seed=2)
    task = TaggingTask(labels=TAGS)
    served = ServingModule(model, tokenizer, task, SEQ).serving_default(text=tf.constant(texts))
    preprocessor = kbert.BertPreprocessor(tokenizer, SEQ, padding="dynamic")
    examples = [{"words": words, "tags": ["O"] * len(words)} for words in sentences]
    predicted, i = [], 0
    for logits, word_ids in model_outputs(model, task.dataset(examples, preprocessor, 16, training=False).dataset,
                                          keep="word_ids"):
        predicted += word_predictions(logits, word_ids, [len(s) for s in sentences[i:i + len(logits)]])
        i += len(logits)
    for row, (text, words, tags) in enumerate(zip(texts, sentences, predicted)):
        count = int(served["num_words"][row])
        assert count == len(words), text
        assert served["word_label_id"][row, :count].numpy().tolist() == tags, text
        starts, ends = (served[k][row, :count].numpy().tolist() for k in ("word_start", "word_end"))
        assert [text[a:b] for a, b in zip(starts, ends)] == words, text
        assert [w.decode() for w in served["word_text"][row, :count].numpy()] == words, text
    assert len({tag for tags in predicted for tag in tags}) > 1


@pytest.mark.parametrize("seed", [3, 4])
@pytest.mark.parametrize("family", FAMILIES)
def test_question_answering_spans(tokenizers, family, seed):
    """Contexts that each fit one window, as the serving graph packs a question and its context."""
    tokenizer = tokenizers[family]
    questions, contexts = held_out(seed, 64), held_out(seed + 100, 64)
    examples = [{"id": str(i), "question": q, "context": c, "answers": []}
                for i, (q, c) in enumerate(zip(questions, contexts))]
    model = PieceLogits(tokenizer.vocabulary_size(), "qa", 2, seed=seed)
    task = QuestionAnsweringTask(max_query_length=16)
    served = ServingModule(model, tokenizer, task, SEQ, "waterfall").serving_default(
        question=tf.constant(questions), context=tf.constant(contexts))
    preprocessor = kbert.BertPreprocessor(tokenizer, SEQ, padding="dynamic")
    data = task.dataset(examples, preprocessor, 16, training=False)
    features = data.extra
    assert len(features) == len(examples)  # one window each

    def full_width(logits):  # each batch was cut to its longest window, as `QuestionAnsweringTask.score` pads
        return np.pad(logits, [(0, 0), (0, SEQ - logits.shape[1])])

    outputs = [y for y, _ in model_outputs(model, data.dataset)]
    start, end = (np.concatenate([full_width(y[k]) for y in outputs]) for k in ("start_logits", "end_logits"))
    texts, spans = decode_answers(examples, features, start, end, max_answer_length=task.max_answer_length,
                                  return_spans=True)
    for i, example in enumerate(examples):
        span, context = spans[example["id"]], example["context"]
        got = (int(served["start_char"][i]), int(served["end_char"][i]))
        assert got == (span["char_start"], span["char_end"]), (context, texts[example["id"]])
        answer = served["answer"][i].numpy().decode()
        assert answer == texts[example["id"]] == context[got[0]:got[1]]
        # An answer starts and ends on characters of its pieces: never empty, never on a space (the pieces'
        # offsets leave spaces out, as HF's trimmed offsets do; a tab or a newline is a piece's character).
        assert answer and answer == answer.strip(" "), (context, answer)
    assert any(not answer.isascii() for answer in texts.values())
