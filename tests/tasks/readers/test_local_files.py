"""Classification readers for CSV / TSV / JSONL files: parsing, and errors that name file and line."""

import json

import pytest

from kbert.tasks.classification import read_classification
from kbert.tasks.readers import read_classification_file


def write(path, text):
    path.write_text(text, encoding="utf-8")
    return path


def test_glue_tsv(tmp_path):
    # GLUE layout: header row, unquoted tab-separated fields; a lone '"' is text, not a quote.
    path = write(tmp_path / "train.tsv", 'sentence\tlabel\na "good" film \t1\nbad\t0\n\n')
    assert read_classification(path, text_column="sentence") == [
        {"text": 'a "good" film ', "text_pair": None, "label": "1"},
        {"text": "bad", "text_pair": None, "label": "0"},
    ]


def test_csv_pairs_with_quoted_newline(tmp_path):
    text = 'id,premise,hypothesis,label\n1,"a cat, sitting",an animal,entailment\n2,"two\nlines",x,neutral\n'
    path = write(tmp_path / "dev.csv", text)
    # The record after a quoted newline starts on line 5 of the file.
    with pytest.raises(ValueError, match=r"bad\.csv:5: empty text in column 'premise'"):
        read_classification(write(tmp_path / "bad.csv", text + "3,,y,neutral\n"), text_column="premise")
    rows = read_classification_file(path, text_column="premise", text_pair_column="hypothesis", label_column=None)
    assert rows[0] == {"text": "a cat, sitting", "text_pair": "an animal", "label": None}
    assert rows[1]["text"] == "two\nlines"


def test_jsonl_and_regression(tmp_path):
    lines = [{"s1": "a", "s2": "b", "score": 3.5}, {"s1": "c", "s2": "d", "score": "1"}]
    path = write(tmp_path / "stsb.jsonl", "\n".join(json.dumps(line) for line in lines) + "\n")
    rows = read_classification(path, text_column="s1", text_pair_column="s2", label_column="score", regression=True)
    assert [row["label"] for row in rows] == [3.5, 1.0]
    # Integer class labels in JSON become strings.
    path = write(tmp_path / "int.jsonl", '{"text": "x", "label": 1}\n\n{"text": "y", "label": 0}\n')
    assert [row["label"] for row in read_classification(path)] == ["1", "0"]


@pytest.mark.parametrize(
    "name, text, kwargs, message",
    [
        ("missing_header.tsv", "sentence\tlabel\nok\t1\n", {"text_column": "text"}, r"missing_header\.tsv:1: no column 'text'"),
        ("short_row.tsv", "sentence\tlabel\nok\t1\nno label here\n", {"text_column": "sentence"},
         r"short_row\.tsv:3: missing column 'label'"),
        ("empty_text.tsv", "sentence\tlabel\nok\t1\n  \t0\n", {"text_column": "sentence"},
         r"empty_text\.tsv:3: empty text"),
        ("unknown.tsv", "sentence\tlabel\nok\t1\nhm\t7\n", {"text_column": "sentence", "labels": ["0", "1"]},
         r"unknown\.tsv:3: unknown label '7'"),
        ("float.csv", "text,label\nok,0.5\nbad,high\n", {"regression": True},
         r"float\.csv:3: label 'high' is not a number"),
        ("extra.tsv", "sentence\tlabel\nok\t1\tmore\n", {"text_column": "sentence"}, r"extra\.tsv:2: 3 fields"),
        ("missing.jsonl", '{"text": "a", "label": "x"}\n{"label": "y"}\n', {}, r"missing\.jsonl:2: missing column 'text'"),
        ("broken.jsonl", '{"text": "a", "label": "x"}\n{"text": \n', {}, r"broken\.jsonl:2: invalid JSON"),
        ("empty_label.csv", "text,label\nok,\n", {}, r"empty_label\.csv:2: empty label"),
    ],
)
def test_bad_rows_name_file_and_line(tmp_path, name, text, kwargs, message):
    path = write(tmp_path / name, text)
    with pytest.raises(ValueError, match=message):
        read_classification(path, **kwargs)


def test_unknown_extension_and_missing_file(tmp_path):
    with pytest.raises(ValueError, match="extension"):
        read_classification(write(tmp_path / "data.xml", "<x/>"))
    with pytest.raises(FileNotFoundError, match="nothing.tsv"):
        read_classification(tmp_path / "nothing.tsv")


def test_real_sst2_dev(shared_data):
    rows = read_classification(shared_data / "sst2" / "dev.tsv", text_column="sentence", labels=["0", "1"])
    assert len(rows) == 872
    assert {row["label"] for row in rows} == {"0", "1"}


def test_headerless_tsv_takes_columns_by_number(tmp_path):
    # GLUE's raw CoLA: source, label, original label, sentence; no header row.
    path = tmp_path / "in_domain_train.tsv"
    path.write_text('gj04\t1\t\tOur friends won\'t buy this analysis.\ngj04\t0\t*\tThey drank the pub "dry.\n')
    examples = read_classification(path, header=False, text_column=3, label_column=1)
    assert examples == [{"text": "Our friends won't buy this analysis.", "text_pair": None, "label": "1"},
                        {"text": 'They drank the pub "dry.', "text_pair": None, "label": "0"}]
    assert read_classification_file(path, header=False, text_column=0, text_pair_column=3,
                                     label_column=1)[1]["text_pair"] == 'They drank the pub "dry.'
    # A number also picks a column of a file with a header.
    named = tmp_path / "named.tsv"
    named.write_text("sentence\tlabel\ngood film\t1\n")
    assert read_classification(named, text_column=0, label_column="label")[0]["text"] == "good film"
    with pytest.raises(ValueError, match=r"named\.tsv:1: no column 5 in the 2 columns"):
        read_classification(named, text_column=5)


def test_headerless_bad_rows_name_file_and_line(tmp_path):
    path = tmp_path / "train.tsv"
    path.write_text("a\t1\tthe cat\nb\t0\n")
    with pytest.raises(ValueError, match=r"train\.tsv:2: missing column 2"):
        read_classification(path, header=False, text_column=2, label_column=1)
    path.write_text("a\t1\tthe cat\nb\t0\tthe dog\textra\n")
    with pytest.raises(ValueError, match=r"train\.tsv:2: 4 fields but the first row has 3"):
        read_classification(path, header=False, text_column=2, label_column=1)
    with pytest.raises(ValueError, match="without a header takes its columns by number"):
        read_classification(path, header=False, text_column="sentence", label_column=1)
    jsonl = tmp_path / "x.jsonl"
    jsonl.write_text('{"text": "a", "label": "1"}\n')
    with pytest.raises(ValueError, match="give column names, not numbers"):
        read_classification(jsonl, text_column=0)
