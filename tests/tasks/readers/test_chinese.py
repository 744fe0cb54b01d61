"""Chinese downstream data as Chinese toolkits ship it: MSRA-style `tokens<TAB>tags` rows, character-level
alignment, CMRC 2018 answers whose answer_start misses their text, and QA windows over unspaced text."""

import json
import warnings

import pytest
import tensorflow as tf

import kbert
from kbert.constants import IGNORE_LABEL
from kbert.tasks.qa_features import build_qa_features
from kbert.tasks.question_answering import read_squad
from kbert.tasks.readers import AnswerOffsetWarning, detect_tag_format, read_space_separated_tags
from kbert.tasks.tagging import read_tagging
from kbert.tasks.tagging_data import align_word_labels

MSRA = "text_a\tlabel\n我 在 北 京 。\tO O B-LOC I-LOC O\n张 三 去 了 华 为\tB-PER I-PER O O B-ORG I-ORG\n"
SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


def write(path, text):
    path.write_text(text, encoding="utf-8")
    return path


def test_space_separated_rows_are_sentences_of_characters(tmp_path):
    path = write(tmp_path / "msra_dev.tsv", MSRA)
    expected = [{"words": ["我", "在", "北", "京", "。"], "tags": ["O", "O", "B-LOC", "I-LOC", "O"]},
                {"words": ["张", "三", "去", "了", "华", "为"], "tags": ["B-PER", "I-PER", "O", "O", "B-ORG", "I-ORG"]}]
    assert read_space_separated_tags(path) == expected
    # Detected from the file, chosen by name, and the same without the header row.
    assert detect_tag_format(path) == "spaces"
    assert read_tagging(path) == read_tagging(path, tag_format="spaces") == expected
    headerless = write(tmp_path / "headerless.tsv", MSRA.split("\n", 1)[1])
    assert read_tagging(headerless) == expected


def test_detection_falls_back_to_conll(tmp_path):
    conll = write(tmp_path / "train.txt", "北 O\n京 O\n")
    assert detect_tag_format(conll) == "conll"
    assert read_tagging(conll) == [{"words": ["北", "京"], "tags": ["O", "O"]}]
    # A .tsv whose columns have different item counts is read as CoNLL columns.
    columns = write(tmp_path / "columns.tsv", "北\tNR\tB-LOC\n京\tNR\tI-LOC\n")
    assert detect_tag_format(columns) == "conll"
    assert read_tagging(columns)[0]["tags"] == ["B-LOC", "I-LOC"]
    # A token per line with a tab before its tag is CoNLL too, not sentences of one character.
    per_line = write(tmp_path / "per_line.tsv", "北\tB-LOC\n京\tI-LOC\n\n去\tO\n")
    assert detect_tag_format(per_line) == "conll"
    assert read_tagging(per_line) == [{"words": ["北", "京"], "tags": ["B-LOC", "I-LOC"]},
                                      {"words": ["去"], "tags": ["O"]}]
    with pytest.raises(ValueError, match="tag_format must be one of"):
        read_tagging(columns, tag_format="bio")
    with pytest.raises(ValueError, match="applies to TSV files"):
        read_tagging("tfds:conll2003", tag_format="spaces")


@pytest.mark.parametrize("row, message", [
    ("我 在 北 京\tO O B-LOC", r"bad\.tsv:3: 4 tokens but 3 tags"),
    ("我 在\tO B_LOC", r"bad\.tsv:3: tag 2 \('B_LOC', on token '在'\) is neither 'O' nor B-/I-/E-/S-"),
    ("我 在\tO B-", r"bad\.tsv:3: tag 2 \('B-'"),
    ("我 在\tO O\tO", r"bad\.tsv:3: 3 tab-separated column\(s\), expected 2"),
    ("我 在", r"bad\.tsv:3: 1 tab-separated column\(s\)"),
    ("  \tO", r"bad\.tsv:3: empty token column"),
])
def test_bad_rows_are_named_by_file_and_line(tmp_path, row, message):
    path = write(tmp_path / "bad.tsv", "text_a\tlabel\n北 京\tB-LOC I-LOC\n" + row + "\n")
    with pytest.raises(ValueError, match=message):
        read_tagging(path, tag_format="spaces")


def test_characters_align_one_label_each():
    # Each character is one word and one piece: labels line up with the characters; a character outside
    # the vocabulary is one [UNK] that still carries its label.
    vocab = SPECIALS + ["北", "京", "在"]
    preprocessor = kbert.BertPreprocessor(kbert.BertTokenizer(vocab), 8)
    words = [["在", "北", "京", "站"]]
    out = align_word_labels(preprocessor, tf.ragged.constant(words), tf.ragged.constant([[0, 1, 2, 0]]))
    assert out["token_ids"].numpy().tolist() == [[2, 7, 5, 6, 1, 3, 0, 0]]
    assert out["labels"].numpy().tolist() == [[IGNORE_LABEL, 0, 1, 2, 0, IGNORE_LABEL, IGNORE_LABEL, IGNORE_LABEL]]
    assert out["word_ids"].numpy().tolist() == [[-1, 0, 1, 2, 3, -1, -1, -1]]


def cmrc_like():
    context = "北京是中国的首都。上海在东边。"
    qas = [
        {"id": "ok", "question": "首都？", "answers": [{"text": "北京", "answer_start": 0}]},
        {"id": "minus-one", "question": "东边？", "answers": [{"text": "上海", "answer_start": -1},
                                                            {"text": "上海", "answer_start": 9}]},
        {"id": "mismatch", "question": "哪里？", "answers": [{"text": "中国", "answer_start": 2}]},
    ]
    return {"version": "v1.0", "data": [{"title": "t", "paragraphs": [{"context": context, "qas": qas}]}]}


def test_answers_off_their_offset_are_skipped_with_a_warning(tmp_path):
    path = write(tmp_path / "cmrc.json", json.dumps(cmrc_like(), ensure_ascii=False))
    with pytest.warns(AnswerOffsetWarning) as caught:
        examples = read_squad(path)
    message = str(caught[0].message)
    assert "skipped 2 of 4 answers" in message and "in 2 question(s) ('minus-one', 'mismatch')" in message
    assert "1 question(s) had no other answer and were dropped" in message and "--strict-answers" in message
    # The question with a good answer left keeps it, for training and for evaluation; the other is gone.
    assert [(e["id"], e["answers"]) for e in examples] == [
        ("ok", [{"text": "北京", "answer_start": 0}]), ("minus-one", [{"text": "上海", "answer_start": 9}])]
    with pytest.raises(ValueError, match=r"cmrc\.json: question 'minus-one': answer '上海' at answer_start -1"):
        read_squad(path, strict_answers=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no warning when nothing is checked
        assert len(read_squad(path, validate_answers=False)) == 3


def test_qa_windows_recover_chinese_answers():
    # Unspaced Chinese: every character is a token; offsets are characters, so a window's span of the
    # answer cuts exactly the gold text out of the context.
    doc = cmrc_like()
    context = doc["data"][0]["paragraphs"][0]["context"]
    tokenizer = kbert.BertTokenizer(SPECIALS + sorted(set(context + "首都东边哪里？")))
    examples = [{"id": "q", "question": "东边？", "context": context,
                 "answers": [{"text": "上海", "answer_start": 9}]}]
    features = build_qa_features(examples, tokenizer, sequence_length=12, doc_stride=3, max_query_length=3)
    assert len(features) > 1
    recovered = answer_texts(features, [context])
    assert recovered and set(recovered) == {"上海"}


def answer_texts(features, contexts):
    """The answer text each window that holds the answer cuts from its context by its offsets."""
    texts = []
    for row in range(len(features)):
        start, end = int(features.start_positions[row]), int(features.end_positions[row])
        if start:
            context = contexts[int(features.example_index[row])]
            texts.append(context[features.char_starts[row, start]:features.char_ends[row, end]])
    return texts


def test_real_chinese_sets(shared_data):
    msra = read_tagging(shared_data / "zh_msra_ner" / "dev.tsv")
    assert len(msra) == 2318 and all(len(e["words"]) == len(e["tags"]) for e in msra)
    with pytest.warns(AnswerOffsetWarning, match="skipped 200 of 9657 answers"):
        cmrc = read_squad(shared_data / "zh_cmrc2018" / "dev.json")
    assert len(cmrc) == 3216
    # QA windows over the first three CMRC questions give back their gold texts.
    chosen = cmrc[:3]
    characters = sorted({c for e in chosen for c in e["context"] + e["question"]})
    tokenizer = kbert.BertTokenizer(SPECIALS + characters)
    features = build_qa_features(chosen, tokenizer, sequence_length=128, doc_stride=32, max_query_length=32)
    recovered = answer_texts(features, [e["context"] for e in chosen])
    gold = [chosen[int(features.example_index[r])]["answers"][0]["text"]
            for r in range(len(features)) if features.start_positions[r]]
    assert len(set(features.example_index[features.start_positions > 0].tolist())) == 3
    assert recovered == gold
