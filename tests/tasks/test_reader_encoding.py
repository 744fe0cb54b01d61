"""A task file with a byte that is not UTF-8 stops `kbert finetune` with the file, line and column named."""

import pytest

from kbert.cli.main import main


@pytest.mark.parametrize("name, header, row", [
    ("train.tsv", b"sentence\tlabel\n", b"the good cat\t1\n"),
    ("train.csv", b"sentence,label\n", b"the good cat,1\n"),
    ("train.jsonl", b"", b'{"sentence": "the good cat", "label": "1"}\n'),
])
def test_bad_byte_names_file_and_line(tmp_path, tiny_vocab_file, capsys, name, header, row):
    bad = row.replace(b"good", b"go\xffod")
    path = tmp_path / name
    path.write_bytes(header + row * 3 + bad + row)
    code = main(["finetune", "classify", "--vocab", str(tiny_vocab_file), "--train", str(path), "--text-column",
                 "sentence", "--label-column", "label", "--out", str(tmp_path / "out"), "--epochs", "1"])
    err = capsys.readouterr().err
    line, column = (5 if header else 4), bad.index(0xFF) + 1
    assert code == 1
    assert f"kbert finetune: error: {path}:{line}:{column}: not valid UTF-8: byte 0xff" in err
    assert "Traceback" not in err and not (tmp_path / "out").exists()
