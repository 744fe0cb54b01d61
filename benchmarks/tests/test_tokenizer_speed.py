"""`benchmarks/tokenizer_speed.py` at its smallest, each family: ids equal to HF's on every text (no timing is
checked). The texts are the generated ones, whether or not ../shared/data is there; albert and roberta learn
tiny vocabularies from them (`kbert vocab` in a subprocess)."""

import pytest

from benchmarks import tokenizer_speed

pytest.importorskip("tokenizers")


def run(monkeypatch, tmp_path, capsys, *argv: str) -> tuple[str, dict[str, list[str]]]:
    """The printed section, and its table's rows: tokenizer -> the cells after it."""
    monkeypatch.setattr(tokenizer_speed, "DATA", tmp_path)  # no ../shared/data: generated texts
    tokenizer_speed.main(["--limit", "40", "--batch-size", "16", "--rounds", "1", "--no-write", *argv])
    out = capsys.readouterr().out
    rows = {}
    for line in out.splitlines():
        if line.startswith("| generated |"):
            cells = [cell.strip() for cell in line.strip("|").split("|")]
            rows[cells[1]] = cells[2:]
    return out, rows


@pytest.mark.slow
@pytest.mark.parametrize("family, vocab_size, title", [
    ("albert", 120, "## Tokenization, ALBERT: kbert SentencePieceTokenizer"),
    ("roberta", 300, "## Tokenization, RoBERTa: kbert ByteLevelBpeTokenizer"),
])
def test_learned_vocabularies_give_hf_ids(family, vocab_size, title, monkeypatch, tmp_path, capsys):
    pytest.importorskip("transformers")
    out, rows = run(monkeypatch, tmp_path, capsys, "--family", family, "--vocab-size", str(vocab_size))
    assert title in out and "Host: " in out and f"--kind {tokenizer_speed.LEARNED[family][0]}" in out
    assert set(rows) == {"kbert (exact)", "kbert (exact) + offsets, word ids"}  # no TFLite row
    for cells in rows.values():
        assert cells[0] == "40" and float(cells[1].replace(",", "")) > 0
        assert cells[-1] == "0"  # id mismatches
    assert "mismatch:" not in out


@pytest.mark.slow
def test_bert_keeps_its_section(minilm, monkeypatch, tmp_path, capsys):
    out, rows = run(monkeypatch, tmp_path, capsys)
    assert "## Tokenization: kbert BertTokenizer + BertPreprocessor (tf.data) vs HF tokenizers" in out
    assert "(all-MiniLM-L6-v2 vocab)" in out and "Machine: " in out
    assert set(rows) == {"kbert (exact)", "kbert (exact) + offsets, word ids", "TFLiteBertTokenizer (in TF)"}
    assert all(cells[-1] == "0" for cells in rows.values())


def test_vocab_size_is_for_learned_vocabularies():
    with pytest.raises(SystemExit):
        tokenizer_speed.main(["--vocab-size", "100", "--no-write"])
