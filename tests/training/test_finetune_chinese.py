"""`kbert finetune classify|tag|qa` on Chinese data laid out as the shared Chinese sets are: book-review
TSV (`label<TAB>text_a`), MSRA NER rows (`text_a<TAB>label`, space-separated characters and tags) and
CMRC 2018 SQuAD JSON with answers whose answer_start misses their text."""

import json
import random

import pytest

import kbert
from kbert.cli.main import main
from kbert.tasks.readers import AnswerOffsetWarning
from tests.training.test_finetune_cli import error_of

FILLER = list("我们在了去是的有到这")
ENTITIES = {"PER": ["张三", "李四"], "LOC": ["北京", "上海"], "ORG": ["华为", "新华社"]}
VOCAB = (["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + FILLER + ["好", "坏", "书", "？", "哪", "谁"]
         + sorted({c for names in ENTITIES.values() for name in names for c in name}))


@pytest.fixture
def zh_init(tmp_path):
    """A random 2-layer encoder with a character vocabulary, as --init takes it."""
    encoder = kbert.BertEncoder(vocab_size=len(VOCAB), hidden_size=32, num_hidden_layers=2,
                                num_attention_heads=2, intermediate_size=64, max_position_embeddings=64)
    directory = tmp_path / "zh_init"
    kbert.save_pretrained(encoder, directory, vocabulary=VOCAB)
    return directory


def msra_rows(n, seed):
    """(characters, tags) rows: filler characters around one entity, tagged IOB2 per character."""
    rng = random.Random(seed)
    rows = []
    for _ in range(n):
        kind = rng.choice(sorted(ENTITIES))
        name = rng.choice(ENTITIES[kind])
        left, right = rng.choices(FILLER, k=rng.randint(1, 4)), rng.choices(FILLER, k=rng.randint(1, 4))
        chars = left + list(name) + right
        tags = ["O"] * len(left) + [f"B-{kind}"] + [f"I-{kind}"] * (len(name) - 1) + ["O"] * len(right)
        rows.append(" ".join(chars) + "\t" + " ".join(tags))
    return rows


def write(path, text):
    path.write_text(text, encoding="utf-8")
    return path


def finetune(task, init, train, validation, out, *extra):
    return main(["finetune", task, "--init", str(init), "--train", str(train), "--validation", str(validation),
                 "--sequence-length", "32", "--epochs", "1", "--batch-size", "8", "--out", str(out), "--verbose", "0",
                 *extra])


def test_tag_msra_layout_reports_entity_f1(tmp_path, zh_init, capsys):
    train = write(tmp_path / "msra_train.tsv", "text_a\tlabel\n" + "\n".join(msra_rows(48, 0)) + "\n")
    dev = write(tmp_path / "msra_dev.tsv", "text_a\tlabel\n" + "\n".join(msra_rows(12, 1)) + "\n")
    out = tmp_path / "ner"
    assert finetune("tag", zh_init, train, dev, out, "--tag-format", "spaces", "--learning-rate", "1e-3") == 0
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["num_examples"] == 12 and 0.0 <= metrics["f1"] <= 1.0
    assert set(metrics["per_type"]) == {"LOC", "ORG", "PER"}
    model = kbert.load_model(out)
    assert sorted(model.task.labels) == sorted(["O"] + [f"{p}-{k}" for k in ENTITIES for p in "BI"])
    assert model.task.tag_format == "spaces"
    # `kbert evaluate` reads the file the same way (here by detection).
    capsys.readouterr()
    assert main(["evaluate", str(out), "--input", str(dev), "--verbose", "0"]) == 0
    assert json.loads(capsys.readouterr().out)["f1"] == pytest.approx(metrics["f1"])
    # A row whose characters and tags differ in number is named by file and line.
    bad = write(tmp_path / "bad.tsv", "text_a\tlabel\n北 京 的\tB-LOC I-LOC\n")
    err = error_of(capsys, ["finetune", "tag", "--init", str(zh_init), "--train", str(bad), "--tag-format",
                            "spaces", "--out", str(tmp_path / "o"), "--verbose", "0"])
    assert "bad.tsv:2: 3 tokens but 2 tags" in err


def test_classify_book_review_layout(tmp_path, zh_init):
    rows = ["1\t这书好", "0\t这书坏", "1\t好书", "0\t坏书", "1\t我们有好书"]
    data = write(tmp_path / "train.tsv", "label\ttext_a\n" + "\n".join(rows) + "\n")
    out = tmp_path / "reviews"
    assert finetune("classify", zh_init, data, data, out, "--text-column", "text_a", "--label-column", "label") == 0
    assert json.loads((out / "metrics.json").read_text())["num_examples"] == 5
    assert kbert.load_model(out).task.labels == ["0", "1"]


def test_qa_skips_answers_off_their_offset(tmp_path, zh_init, capsys):
    context = "张三去了北京。李四在上海。"
    qas = [{"id": "ok", "question": "谁去了北京？", "answers": [{"text": "张三", "answer_start": 0}]},
           {"id": "minus-one", "question": "李四在哪？", "answers": [{"text": "上海", "answer_start": -1}]},
           {"id": "mismatch", "question": "谁在上海？", "answers": [{"text": "李四", "answer_start": 2},
                                                               {"text": "李四", "answer_start": 7}]}]
    doc = {"version": "v1.0", "data": [{"title": "t", "paragraphs": [{"context": context, "qas": qas}]}]}
    path = write(tmp_path / "cmrc.json", json.dumps(doc, ensure_ascii=False))
    out = tmp_path / "qa"
    with pytest.warns(AnswerOffsetWarning, match=r"\('minus-one', 'mismatch'\)"):
        assert finetune("qa", zh_init, path, path, out, "--doc-stride", "8") == 0
    # Evaluated on the questions that keep a gold text.
    assert json.loads((out / "metrics.json").read_text())["num_examples"] == 2
    err = error_of(capsys, ["finetune", "qa", "--init", str(zh_init), "--train", str(path), "--strict-answers",
                            "--out", str(tmp_path / "o"), "--verbose", "0"])
    assert "question 'minus-one': answer '上海' at answer_start -1 runs outside the context" in err
