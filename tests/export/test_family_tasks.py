"""`kbert finetune TASK --init DIR`, `kbert export` and `kbert predict` for the ALBERT and RoBERTa families:
a tiny random HF checkpoint with its own tokenizer files (RoBERTa: byte-level BPE learned by HF `tokenizers`),
fine-tuned end to end; the SavedModel answers as the Keras model does and packs as HF's tokenizer does. ALBERT
with SentencePiece tags words and answers questions at their own characters of the text, whatever its
normaliser changes (capitals, accents, ``quote pairs'', runs of spaces)."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest
import tensorflow as tf

import kbert
from kbert.cli.main import main
from kbert.export import ExportSource, export
from kbert.export.model_precision import with_precision
from kbert.tasks.qa_features import build_qa_features
from kbert.tasks.span_decoding import decode_answers
from kbert.tasks.tagging_data import tagging_dataset
from kbert.tasks.word_decoding import word_predictions
from tests.family_checkpoints import albert_dir, albert_sentencepiece_dir, roberta_dir
from tests.training.conftest import FILLER, keyword_rows, write_tsv

transformers = pytest.importorskip("transformers")
TEXTS = ["the good cat sat", "a bad dog ran on the mat .", "good", "dog , cat"]


@pytest.fixture(scope="module")
def roberta_init(tmp_path_factory):
    rows = keyword_rows(64, 0)
    return roberta_dir(tmp_path_factory.mktemp("roberta") / "init", [text for text, _ in rows])


def finetune(tmp_path, init, command: str, header: list[str], rows, *flags: str):
    """`kbert finetune COMMAND --init INIT` on `rows` (a TSV), or on the file given as the first of `flags`."""
    train = write_tsv(tmp_path / f"{command}.tsv", header, rows) if rows else flags[0]
    flags = flags if rows else flags[1:]
    out = tmp_path / f"{command}-model"
    assert main(["finetune", command, "--init", str(init), "--train", str(train), "--validation", str(train),
                 "--sequence-length", "32", "--epochs", "1", "--batch-size", "16", "--out", str(out),
                 # float32: under bf16 (the default on a host with AMX) the SavedModel's and the Keras model's
                 # roundings differ, and a barely trained QA head's near-tied spans then swap.
                 "--mixed-precision", "none", "--verbose", "0", *flags]) == 0
    return out


@pytest.mark.slow  # fine-tuning, a SavedModel and a reload: about 30 s
def test_roberta_classify_finetune_export_predict(tmp_path, roberta_init, capsys):
    out = finetune(tmp_path, roberta_init, "classify", ["text", "label"], keyword_rows(32, 1))
    model = kbert.load_model(out)
    assert isinstance(model.tokenizer, kbert.ByteLevelBpeTokenizer)
    export = tmp_path / "export" / "1"
    assert main(["export", str(out), "--out", str(export)]) == 0
    # The export carries the tokenizer's own files: they reload as the same tokenizer.
    assert kbert.load_tokenizer(export / "assets").get_vocabulary() == model.tokenizer.get_vocabulary()
    config = json.loads((export / "assets" / "kbert_export.json").read_text())
    assert config["tokenizer"]["tokenizer_class"] == "RobertaTokenizer"
    loaded = tf.saved_model.load(str(export))
    # Packing as HF's RoBERTa tokenizer does, one text and a pair (<s> a </s></s> b </s>, segment ids 0).
    hf = transformers.RobertaTokenizerFast.from_pretrained(str(roberta_init))
    packed = loaded.signatures["preprocess_pair"](text=tf.constant(TEXTS), text_pair=tf.constant(TEXTS[::-1]))
    reference = hf(TEXTS, TEXTS[::-1], padding=True)
    np.testing.assert_array_equal(packed["token_ids"].numpy(), reference["input_ids"])
    np.testing.assert_array_equal(packed["padding_mask"].numpy(), reference["attention_mask"])
    assert not packed["segment_ids"].numpy().any()
    # The SavedModel answers as the Keras model on the same texts, and `kbert predict` prints it.
    got = loaded.signatures["serving_default"](text=tf.constant(TEXTS))["probabilities"].numpy()
    float32 = with_precision(model, "float32")  # as exported (training here may pick mixed bfloat16)
    want = tf.nn.softmax(float32(model.preprocessor(TEXTS), training=False)).numpy()
    np.testing.assert_allclose(got, want, atol=1e-5)
    # LiteRT's built-ins cannot hold byte-level BPE: --tflite refuses, says why and what converts it (select ops,
    # tests/export/test_select_tf_ops.py), and writes nothing.
    refused = tmp_path / "export" / "2"
    capsys.readouterr()
    assert main(["export", str(out), "--out", str(refused), "--tflite"]) == 1
    error = capsys.readouterr().err
    assert "LiteRT" in error and "--select-tf-ops" in error and not refused.parent.joinpath("2").exists()
    assert sorted(p.name for p in refused.parent.iterdir()) == ["1"]
    assert main(["predict", str(export), *TEXTS]) == 0
    printed = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith("{")]
    np.testing.assert_allclose([p["probabilities"] for p in printed], want, atol=1e-5)


def exported_signature(tmp_path, out, head: str):
    """The model directory `out` loaded, its `head` kernel scaled (so that argmaxes vary between pieces),
    exported with `kbert.export`, and the export's `serving_default`."""
    model = kbert.load_model(out, compile=False)
    model.get_layer(head).kernel.assign(model.get_layer(head).kernel * 200)
    source = ExportSource(model, model.tokenizer, model.task, 32, model.preprocessor.truncate)
    path = export(source, tmp_path / "export" / model.task.name)
    # The export computes in float32, whatever precision fine-tuning picked on this CPU: compare with that.
    float32 = with_precision(model, "float32")
    float32.tokenizer, float32.preprocessor, float32.task = model.tokenizer, model.preprocessor, model.task
    return float32, tf.saved_model.load(str(path)).signatures["serving_default"]


@pytest.mark.slow  # fine-tuning and a SavedModel: about 30 s
def test_roberta_tag_export_words_equal_evaluation(tmp_path, roberta_init):
    # "U.S." is one word to RoBERTa, whose words are split at spaces alone.
    assert_tag_export_equals_evaluation(tmp_path, roberta_init, {"U.S.": "O"})


def assert_tag_export_equals_evaluation(tmp_path, init, more_words: dict[str, str] | None = None):
    """`kbert finetune tag --init INIT` on random sentences of a few words (and `more_words`, word -> tag); the
    export's words and labels are evaluation's. Returns the fine-tuned model (float32)."""
    words = {"cat": "B-ANI", "cats": "B-ANI", "dog": "B-ANI", "mat": "B-OBJ", "the": "O", "sat": "O", "on": "O",
             "ran": "O", ",": "O", **(more_words or {})}
    rng = random.Random(2)
    sentences = [rng.choices(list(words), k=rng.randint(3, 9)) for _ in range(48)]
    conll = tmp_path / "train.txt"
    conll.write_text("".join("".join(f"{w} X {words[w]}\n" for w in s) + "\n" for s in sentences), encoding="utf-8")
    out = finetune(tmp_path, init, "tag", [], None, str(conll))
    model, serving = exported_signature(tmp_path, out, "logits")
    examples = [{"words": s, "tags": [words[w] for w in s]} for s in sentences[:8]]
    answer = serving(text=tf.constant([" ".join(e["words"]) for e in examples]))
    (inputs,) = list(tagging_dataset(examples, model.preprocessor, model.task.labels, batch_size=8,
                                     with_labels=False, keep_word_ids=True))
    word_ids = inputs.pop("word_ids").numpy()
    predicted = word_predictions(model(inputs, training=False), word_ids, [len(e["words"]) for e in examples])
    for i, (example, labels) in enumerate(zip(examples, predicted)):
        count = int(answer["num_words"][i])
        assert count == len(example["words"]) == len(labels)
        assert answer["word_label_id"][i, :count].numpy().tolist() == labels
        assert [w.decode() for w in answer["word_text"][i, :count].numpy()] == example["words"]
    assert len({label for labels in predicted for label in labels}) > 1
    return model


def write_squad(path, seed: int, answers: list[str], question: str = "who ?",
                before: tuple[list[str], int] = (FILLER, 4), after: int = 3, gap: str = " ! ") -> list[dict]:
    """32 QA examples written at `path` as a SQuAD v1.1 file, and returned: each asks `question` of a context
    `BEFORE{gap}ANSWER AFTER` (BEFORE: `before[1]` words drawn from `before[0]`; AFTER: `after` words of FILLER;
    ANSWER: one of `answers`), drawn with `seed`."""
    rng = random.Random(seed)
    examples = []
    for i in range(32):
        head, tail = " ".join(rng.choices(before[0], k=before[1])), " ".join(rng.choices(FILLER, k=after))
        answer = rng.choice(answers)
        examples.append({"id": str(i), "question": question, "context": f"{head}{gap}{answer} {tail}",
                         "answers": [{"text": answer, "answer_start": len(head) + len(gap)}]})
    path.write_text(json.dumps({"version": "1.1", "data": [{"title": "t", "paragraphs": [
        {"context": e["context"], "qas": [{k: e[k] for k in ("id", "question", "answers")}]} for e in examples]}]}))
    return examples


def assert_serving_answers_as_evaluation(model, serving, examples: list[dict], features) -> tuple[dict, dict]:
    """The export's answers to `examples` (`serving`: its span signature) are the Keras model's on `features`,
    decoded as evaluation decodes them: the same characters and the same text. Returns evaluation's
    (texts, spans)."""
    answer = serving(question=tf.constant([e["question"] for e in examples]),
                     context=tf.constant([e["context"] for e in examples]))
    logits = model(features.inputs(), training=False)
    texts, spans = decode_answers(examples, features, logits["start_logits"].numpy(), logits["end_logits"].numpy(),
                                  return_spans=True)
    for i, example in enumerate(examples):
        span = spans[example["id"]]
        assert (span["char_start"], span["char_end"]) == (int(answer["start_char"][i]), int(answer["end_char"][i]))
        assert texts[example["id"]] == answer["answer"][i].numpy().decode()
    return texts, spans


@pytest.mark.slow  # fine-tuning and a SavedModel: about 30 s
def test_roberta_qa_export_answers_equal_evaluation(tmp_path, roberta_init):
    squad = tmp_path / "train.json"
    examples = write_squad(squad, 3, ["good cat", "bad dog"])
    out = finetune(tmp_path, roberta_init, "qa", [], None, str(squad), "--doc-stride", "8", "--max-query-length", "8")
    model, serving = exported_signature(tmp_path, out, "span_logits")
    examples = examples[:8]
    features = build_qa_features(examples, model.tokenizer, 32, max_query_length=8)
    assert len(features) == len(examples)  # one window each, as the serving graph packs
    # RoBERTa's pair: <s> question </s></s> context </s>, all segment id 0.
    packed = model.preprocessor(([e["question"] for e in examples], [e["context"] for e in examples]))
    np.testing.assert_array_equal(features.token_ids, packed["token_ids"].numpy())
    assert not features.segment_ids.any()
    assert_serving_answers_as_evaluation(model, serving, examples, features)


@pytest.mark.slow  # fine-tuning and a SavedModel, for each of ALBERT's two tokenizers: about 60 s
@pytest.mark.parametrize("tokenizer", ["sentencepiece", "wordpiece"])
def test_albert_classify_finetune_export_predict(tmp_path, capsys, tokenizer):
    """ALBERT with its own SentencePiece model (English releases) or a WordPiece vocab.txt (Chinese ones)."""
    rows = keyword_rows(64, 0)
    init = tmp_path / "albert"
    if tokenizer == "sentencepiece":
        albert_sentencepiece_dir(init, [text for text, _ in rows])
    else:
        from tests.conftest import TINY_VOCAB
        albert_dir(init, TINY_VOCAB)
    out = finetune(tmp_path, init, "classify", ["text", "label"], keyword_rows(32, 1))
    model = kbert.load_model(out)
    assert isinstance(model.encoder, kbert.AlbertEncoder)
    assert type(model.tokenizer).__name__ == ("SentencePieceTokenizer" if tokenizer == "sentencepiece"
                                              else "BertTokenizer")
    export = tmp_path / "export" / "1"
    assert main(["export", str(out), "--out", str(export)]) == 0
    got = tf.saved_model.load(str(export)).signatures["serving_default"](text=tf.constant(TEXTS))["probabilities"]
    float32 = with_precision(model, "float32")
    want = tf.nn.softmax(float32(model.preprocessor(TEXTS), training=False)).numpy()
    np.testing.assert_allclose(got.numpy(), want, atol=1e-5)
    capsys.readouterr()
    assert main(["predict", str(export), *TEXTS]) == 0
    printed = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith("{")]
    np.testing.assert_allclose([p["probabilities"] for p in printed], want, atol=1e-5)


# Words that ALBERT's normaliser changes (capitals, accents, ``quote pairs''): serving gives each word's tag
# on its own characters of the text, whatever the normalised text the model reads.
ALBERT_WORDS = {"Cat": "B-ANI", "cät": "B-ANI", "Dög": "B-ANI", "Café": "B-OBJ", "mat": "B-OBJ", "Zoë": "B-PER",
                "the": "O", "sat": "O", "on": "O", "ran": "O", ",": "O", "``": "O", "''": "O"}
ALBERT_ANSWERS = ["Good Cät", "``bad''  Dög", "Zoë   Café"]


@pytest.fixture(scope="module")
def albert_sentencepiece_init(tmp_path_factory):
    lines = [text for text, _ in keyword_rows(64, 0)] + [" ".join(ALBERT_WORDS), " ".join(ALBERT_ANSWERS)] * 4
    return albert_sentencepiece_dir(tmp_path_factory.mktemp("albert") / "init", lines)


def word_spans(words: list[str], separator: str, lead: str = "") -> list[tuple[int, int]]:
    """Each word's (start, end) in characters of `lead + separator.join(words)`."""
    spans, at = [], len(lead)
    for word in words:
        spans.append((at, at + len(word)))
        at += len(word) + len(separator)
    return spans


@pytest.mark.slow  # fine-tuning, a SavedModel and `kbert predict`: about 15 s
def test_albert_sentencepiece_tag_words_at_their_characters(tmp_path, albert_sentencepiece_init, capsys):
    rng = random.Random(4)
    sentences = [rng.choices(list(ALBERT_WORDS), k=rng.randint(3, 9)) for _ in range(48)]
    conll = tmp_path / "train.txt"
    conll.write_text("".join("".join(f"{w} X {ALBERT_WORDS[w]}\n" for w in s) + "\n" for s in sentences),
                     encoding="utf-8")
    out = finetune(tmp_path, albert_sentencepiece_init, "tag", [], None, str(conll))
    model, serving = exported_signature(tmp_path, out, "logits")
    assert type(model.tokenizer).__name__ == "SentencePieceTokenizer"
    examples = [{"words": s, "tags": [ALBERT_WORDS[w] for w in s]} for s in sentences[:8]]
    (inputs,) = list(tagging_dataset(examples, model.preprocessor, model.task.labels, batch_size=8,
                                     with_labels=False, keep_word_ids=True))
    word_ids = inputs.pop("word_ids").numpy()
    predicted = word_predictions(model(inputs, training=False), word_ids, [len(e["words"]) for e in examples])
    assert len({label for labels in predicted for label in labels}) > 1
    # The words joined by one space, and by runs of spaces after a leading tab: the same labels, on the
    # original characters of each text.
    for separator, lead in ((" ", ""), ("   ", "\t ")):
        texts = [lead + separator.join(e["words"]) for e in examples]
        answer = serving(text=tf.constant(texts))
        for i, (example, labels) in enumerate(zip(examples, predicted)):
            count = int(answer["num_words"][i])
            assert count == len(example["words"]) == len(labels)
            assert answer["word_label_id"][i, :count].numpy().tolist() == labels
            spans = list(zip(answer["word_start"][i, :count].numpy().tolist(),
                             answer["word_end"][i, :count].numpy().tolist()))
            assert spans == word_spans(example["words"], separator, lead), texts[i]
            assert [w.decode() for w in answer["word_text"][i, :count].numpy()] == example["words"]
            for k in range(int(answer["num_entities"][i])):
                start, end = int(answer["entity_start"][i, k]), int(answer["entity_end"][i, k])
                assert start in {a for a, _ in spans} and end in {b for _, b in spans}
                assert answer["entity_text"][i, k].numpy().decode() == texts[i][start:end]
    # `kbert predict` on the export prints the same words.
    capsys.readouterr()
    assert main(["predict", str(tmp_path / "export" / model.task.name), "\t Zoë  ``Café''"]) == 0
    (printed,) = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith("{")]
    assert printed["word_text"] == ["Zoë", "``Café''"]
    assert list(zip(printed["word_start"], printed["word_end"])) == [(2, 5), (7, 15)]


@pytest.mark.slow  # fine-tuning, a SavedModel and `kbert predict`: about 15 s
def test_albert_sentencepiece_qa_answers_at_their_characters(tmp_path, albert_sentencepiece_init, capsys):
    squad = tmp_path / "train.json"
    examples = write_squad(squad, 5, ALBERT_ANSWERS, question="Who ?", before=(FILLER + ["Café", "THE"], 3), after=2,
                           gap="  ! ")
    out = finetune(tmp_path, albert_sentencepiece_init, "qa", [], None, str(squad), "--doc-stride", "8",
                   "--max-query-length", "8")
    model, serving = exported_signature(tmp_path, out, "span_logits")
    assert type(model.tokenizer).__name__ == "SentencePieceTokenizer"
    features = build_qa_features(examples, model.tokenizer, 32, max_query_length=8)
    assert len(features) == len(examples)  # one window each, as the serving graph packs
    # The gold answers' tokens cover exactly the answers' characters of the contexts, and logits that point at
    # them decode to the answers as the contexts spell them.
    assert {e["answers"][0]["text"] for e in examples} == set(ALBERT_ANSWERS)
    for w, example in enumerate(examples):
        start, end = features.start_positions[w], features.end_positions[w]
        assert start > 0
        gold = example["answers"][0]
        assert (features.char_starts[w, start], features.char_ends[w, end]) == (
            gold["answer_start"], gold["answer_start"] + len(gold["text"])), example["context"]
    positions = np.arange(features.token_ids.shape[1])
    pointing = [np.where(positions == p[:, None], 10.0, 0.0)
                for p in (features.start_positions, features.end_positions)]
    assert decode_answers(examples, features, *pointing) == {e["id"]: e["answers"][0]["text"] for e in examples}
    # ALBERT's pair: [CLS] question [SEP] context [SEP], the context's segment id 1.
    packed = model.preprocessor(([e["question"] for e in examples], [e["context"] for e in examples]))
    np.testing.assert_array_equal(features.token_ids, packed["token_ids"].numpy())
    np.testing.assert_array_equal(features.segment_ids, packed["segment_ids"].numpy())
    examples, features = examples[:8], build_qa_features(examples[:8], model.tokenizer, 32, max_query_length=8)
    texts, spans = assert_serving_answers_as_evaluation(model, serving, examples, features)
    for example in examples:
        span = spans[example["id"]]
        assert texts[example["id"]] == example["context"][span["char_start"]:span["char_end"]] != ""
    # `kbert predict` takes the question and the context in turn and prints the same answer.
    capsys.readouterr()
    assert main(["predict", str(tmp_path / "export" / model.task.name), examples[0]["question"],
                 examples[0]["context"]]) == 0
    (printed,) = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith("{")]
    assert printed["answer"] == texts[examples[0]["id"]]
