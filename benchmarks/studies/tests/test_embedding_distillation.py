"""benchmarks/studies/embedding_distillation.py: the unlabelled texts it reads from WikiText-2 and the search pairs it
reads from SQuAD (a file of each kind written here: the shared data is not needed)."""

import json

from benchmarks.studies import embedding_distillation as study


def test_wikitext_paragraphs_and_sentences_without_its_marks(tmp_path, monkeypatch):
    raw = tmp_path / "wiki.test.raw"
    raw.write_text(" = Title = \r\n The mid @-@ 1990s saw 1 @,@ 000 ships sail . They sailed far away from home .\r\n"
                   " Too short here .\r\n", encoding="utf-8")
    monkeypatch.setattr(study, "WIKITEXT", raw)
    texts = study.wikitext_texts(None)
    paragraph = "The mid-1990s saw 1,000 ships sail . They sailed far away from home ."
    assert sorted(texts) == sorted([paragraph, "The mid-1990s saw 1,000 ships sail .",
                                    "They sailed far away from home ."])
    assert texts == study.wikitext_texts(None)  # one order in every process
    assert len(study.wikitext_texts(2)) == 2


def test_one_question_per_paragraph(tmp_path, monkeypatch):
    squad = tmp_path / "dev.json"
    paragraph = {"context": "A  long\ncontext.", "qas": [{"question": " First? "}, {"question": "Second?"}]}
    squad.write_text(json.dumps({"data": [{"paragraphs": [paragraph, paragraph]}]}), encoding="utf-8")
    monkeypatch.setattr(study, "SQUAD", squad)
    assert study.squad_pairs(None) == [{"text": "First?", "text_pair": "A long context."}] * 2
    assert len(study.squad_pairs(1)) == 1
