"""`read_rows`: every data row of a JSONL, CSV, TSV or Parquet file, with its id and text or its problem."""

from __future__ import annotations

import pytest

import kbert.file_io as file_io
from kbert.embeddings.corpus_rows import read_rows


def rows_of(path, **kwargs):
    return [(r.row_index, r.id, r.text, r.problem) for r in read_rows(path, 0, "text", "id", **kwargs)]


def test_jsonl_rows_and_their_problems(ram_root):
    path = f"{ram_root}/a.jsonl"
    file_io.write_bytes(path, b"\xef\xbb\xbf" + b"\n".join([
        b'{"id": "a", "text": "caf\xc3\xa9"}',
        b'',                                            # blank: not a row
        b'{"id": 7, "text": "seven"}',                  # an integer id is its decimal text
        b'{"id": "b", "text": "bad \xff byte"}',
        b'{"id": "c", "text": "lone \\ud800 escape"}',  # valid JSON, but no UTF-8 holds it
        b'{"id": "d", "text": "   "}',
        b'{"id": "e"}',
        b'{"id": 1.5, "text": "float id"}',
        b'{"id": true, "text": "bool id"}',
        b'{"text": "no id"}',
        b'{"id": " ", "text": "blank id"}',
        b'{"id": "f", "text": 3}',
    ]) + b"\n")
    assert rows_of(path) == [
        (0, "a", "caf\u00e9", None), (1, "7", "seven", None), (2, "b", None, "bad_utf8"),
        (3, "c", None, "bad_utf8"), (4, "d", None, "empty_text"), (5, "e", None, "empty_text"),
        (6, None, None, "missing_id"), (7, None, None, "missing_id"), (8, None, None, "missing_id"),
        (9, None, None, "missing_id"), (10, "f", None, "empty_text")]
    messages = [r.message for r in read_rows(path, 0, "text", "id")]
    assert messages[2] == f"{path}:4: 'text' is not valid UTF-8"
    assert messages[6] == f"{path}:8: no id: 'id' is float, not a string or an integer"
    assert messages[10] == f"{path}:12: no text: 'text' is int, not a string"


@pytest.mark.parametrize("name, content, message", [
    ("bad.jsonl", '{"id": "a", "text": "x"}\n{"id": \n', r"bad.jsonl:2: invalid JSON"),
    ("list.jsonl", '["a", "b"]\n', r"list.jsonl:1: expected a JSON object, got list"),
    ("a.csv", "key,text\n1,x\n", r"a.csv:1: no column 'id' in the header \['key', 'text'\]"),
    ("long.csv", "id,text\n1,x\n2,y,z\n", r"long.csv:3: 3 fields but the header has 2"),
    ("a.txt", "x\n", r"cannot tell the format from the extension '.txt'"),
])
def test_a_broken_file_is_an_error_naming_the_line(ram_root, name, content, message):
    file_io.write_text(f"{ram_root}/{name}", content)
    with pytest.raises(ValueError, match=message):
        rows_of(f"{ram_root}/{name}")


def test_a_format_given_overrides_the_extension(ram_root):
    file_io.write_text(f"{ram_root}/b.txt", "id\ttext\nk\tv\n")
    assert rows_of(f"{ram_root}/b.txt", file_format="tsv") == [(0, "k", "v", None)]


def test_csv_and_tsv_rows_keep_their_line_numbers(ram_root):
    file_io.write_bytes(f"{ram_root}/a.csv", b'text,id\n"two\nlines",x1\n\nbad \xfe,x2\n,x3\nok,\n')
    rows = list(read_rows(f"{ram_root}/a.csv", 3, "text", "id"))
    assert [(r.file_index, r.id, r.text, r.problem) for r in rows] == [
        (3, "x1", "two\nlines", None), (3, "x2", None, "bad_utf8"), (3, "x3", None, "empty_text"),
        (3, None, None, "missing_id")]
    assert [r.where for r in rows] == [f"{ram_root}/a.csv:{n}" for n in (2, 5, 6, 7)]
    # TSV is unquoted (GLUE's layout): a quote is text.
    file_io.write_text(f"{ram_root}/a.tsv", 'id\ttext\nq1\tsay "hi\nq2\tsecond\n')
    assert rows_of(f"{ram_root}/a.tsv") == [(0, "q1", 'say "hi', None), (1, "q2", "second", None)]


def test_parquet_rows(ram_root):
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    table = pa.table({"id": pa.array([1, 2, None, 4]), "text": pa.array([b"one", b"\xff", b"three", b""]),
                      "other": pa.array([0, 0, 0, 0])})
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink)
    file_io.write_bytes(f"{ram_root}/a.parquet", sink.getvalue().to_pybytes())
    assert rows_of(f"{ram_root}/a.parquet") == [
        (0, "1", "one", None), (1, "2", None, "bad_utf8"), (2, None, None, "missing_id"),
        (3, "4", None, "empty_text")]
    with pytest.raises(ValueError, match=r"no column 'body' in the Parquet schema \['id', 'text', 'other'\]"):
        list(read_rows(f"{ram_root}/a.parquet", 0, "body", "id"))
