"""TextCorpus (both file layouts, globs, tfds) and the sentence splitter, against hand-written expectations."""

import pytest

from kbert.pretraining_data.corpus import TextCorpus, expand_inputs, split_sentences


def test_sentences_layout_exact_documents(tmp_path):
    (tmp_path / "a.txt").write_bytes(
        b"First one.\r\nSecond one.\r\n\r\n\r\nOther doc.\n   \nThird doc line.\nmore\n")
    (tmp_path / "b.txt").write_text("File two starts.\n", encoding="utf-8")
    docs = list(TextCorpus(str(tmp_path / "*.txt")))
    assert docs == [["First one.", "Second one."], ["Other doc."], ["Third doc line.", "more"],
                    ["File two starts."]]


def test_documents_layout_splits_english_and_chinese(tmp_path):
    path = tmp_path / "docs.txt"
    path.write_text("Mr. Brown left. Did he stay? No!\n\n我很好。你呢？好的\n", encoding="utf-8")
    assert list(TextCorpus(str(path), layout="documents")) == [
        ["Mr. Brown left.", "Did he stay?", "No!"], ["我很好。", "你呢？", "好的"]]


@pytest.mark.parametrize("text,expected", [
    ("Pi is 3.14 today. Yes.", ["Pi is 3.14 today.", "Yes."]),
    ('He said "Stop!" Then he left.', ['He said "Stop!"', "Then he left."]),
    ("See e.g. this one. Dr. Who came.", ["See e.g. this one.", "Dr. Who came."]),
    ("他说：“你好。”然后走了……好吗?好",
     ["他说：“你好。”", "然后走了……", "好吗?", "好"]),
    ("   ", []),
    ("no end punctuation", ["no end punctuation"]),
])
def test_split_sentences(text, expected):
    assert split_sentences(text) == expected


def test_corpus_is_reiterable_and_streams_until_bad_utf8(tmp_path):
    path = tmp_path / "bad.txt"
    path.write_bytes(b"ok one\n\nok two\n\n\xff\xfe broken\n")
    corpus = TextCorpus(str(path), encoding_errors="strict")
    stream = iter(corpus)
    assert next(stream) == ["ok one"]  # yielded before the bad line is read
    assert next(stream) == ["ok two"]
    with pytest.raises(ValueError, match=r"bad\.txt:5: not valid UTF-8"):
        next(stream)


def test_empty_file_gives_no_documents(tmp_path):
    (tmp_path / "empty.txt").write_text("\n\n  \n", encoding="utf-8")
    assert list(TextCorpus(str(tmp_path / "empty.txt"))) == []


def test_globs_comma_separated_and_missing(tmp_path):
    for name in ("b.txt", "a.txt", "c.md"):
        (tmp_path / name).write_text("x\n", encoding="utf-8")
    files = expand_inputs(f"{tmp_path}/*.txt,{tmp_path}/*.md")
    assert [f.rsplit("/", 1)[1] for f in files] == ["a.txt", "b.txt", "c.md"]
    with pytest.raises(FileNotFoundError, match="nothing-here"):
        TextCorpus(str(tmp_path / "nothing-here*.txt"))
    with pytest.raises(ValueError, match="layout"):
        TextCorpus(str(tmp_path / "a.txt"), layout="pages")


def test_tfds_dataset_by_name():
    tfds = pytest.importorskip("tensorflow_datasets")
    with tfds.testing.mock_data(num_examples=4):
        docs = list(TextCorpus("tfds:imdb_reviews", layout="documents"))
        assert TextCorpus("tfds:imdb_reviews:test").tfds_split == "test"
        assert len(docs) == 4 and all(docs) and all(isinstance(s, str) for d in docs for s in d)
        with pytest.raises(KeyError, match="no feature 'body'"):
            list(TextCorpus("tfds:imdb_reviews", text_key="body"))


LATIN1 = "caf\u00e9 ol\u00e9\nclean line\n\nna\u00efve\n".encode("latin-1")


def test_encoding_errors_replace_warns_naming_file_and_lines(tmp_path):
    from kbert.text.text_files import CorpusEncodingWarning

    path = tmp_path / "latin1.txt"
    path.write_bytes(LATIN1)
    with pytest.warns(CorpusEncodingWarning, match=r"latin1\.txt: 2 line\(s\) were not valid UTF-8.*U\+FFFD"):
        docs = list(TextCorpus(str(path)))
    assert docs == [["caf\ufffd ol\ufffd", "clean line"], ["na\ufffdve"]]


def test_encoding_errors_ignore_and_strict(tmp_path):
    from kbert.text.text_files import CorpusEncodingWarning

    path = tmp_path / "latin1.txt"
    path.write_bytes(LATIN1)
    with pytest.warns(CorpusEncodingWarning, match="2 line.*dropped"):
        assert list(TextCorpus(str(path), encoding_errors="ignore")) == [["caf ol", "clean line"], ["nave"]]
    with pytest.raises(ValueError, match=r"latin1\.txt:1: not valid UTF-8"):
        list(TextCorpus(str(path), encoding_errors="strict"))
    with pytest.raises(ValueError, match="encoding_errors"):
        TextCorpus(str(path), encoding_errors="latin-1")


def test_clean_file_gives_no_warning(tmp_path, recwarn):
    path = tmp_path / "clean.txt"
    path.write_text("\ufeffAll good.\n", encoding="utf-8")
    assert list(TextCorpus(str(path))) == [["All good."]]
    assert not recwarn.list


def test_paragraphs_layout_joins_wrapped_lines_and_keeps_a_file_as_one_document(tmp_path):
    (tmp_path / "a.txt").write_text("It was a dark\nnight. Mr. Brown\nslept.\n\n\nThen rain came.\n", encoding="utf-8")
    (tmp_path / "b.txt").write_text("Second book.\r\nStill it.\r\n", encoding="utf-8")
    assert list(TextCorpus(str(tmp_path / "*.txt"), layout="paragraphs")) == [
        ["It was a dark night.", "Mr. Brown slept.", "Then rain came."], ["Second book.", "Still it."]]
