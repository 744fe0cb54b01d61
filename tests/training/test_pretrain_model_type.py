"""`kbert pretrain --model-type`: the raw-text defaults it sets, a data directory's own settings, the encoder
family it picks, and RoBERTa's full-sentence packing on raw text."""

import json

import pytest

import kbert
from kbert.cli.main import main
from kbert.training.run_setup import build_encoder
from kbert.training.pretrain import _data_config
from kbert.training.pretrain_config import PretrainConfig

VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat", "dog", "sat", "ran", "on", "a", "mat", "."]


@pytest.fixture
def corpus(tmp_path):
    (tmp_path / "vocab.txt").write_text("\n".join(VOCAB) + "\n")
    lines = ["the cat sat on a mat .", "the dog ran .", "a cat ran on the mat .", ""] * 30
    (tmp_path / "corpus.txt").write_text("\n".join(lines))
    return tmp_path


def settings(**fields):
    data = _data_config(PretrainConfig(train="corpus.txt", out="run", **fields), None, fields.get("objective"))
    return data.objective, data.packing, data.ngram, data.whole_word_masking


def test_raw_text_defaults_follow_the_model_type_and_given_flags_win():
    assert settings() == ("nsp", "segment-pair", 1, False)  # BERT's, as before --model-type
    assert settings(model_type="albert") == ("sop", "segment-pair", 3, True)
    assert settings(model_type="roberta") == ("none", "full-sentences", 1, False)
    assert settings(model_type="albert", ngram=2, whole_word_masking=False) == ("sop", "segment-pair", 2, False)
    assert settings(model_type="roberta", objective="nsp") == ("nsp", "segment-pair", 1, False)
    assert settings(packing="full-sentences") == ("none", "full-sentences", 1, False)
    with pytest.raises(ValueError, match="no sentence pair for objective 'sop'"):
        PretrainConfig(train="t", out="o", packing="full-sentences", objective="sop").validate()
    with pytest.raises(ValueError, match="model_type must be one of"):
        PretrainConfig(train="t", out="o", model_type="gpt").validate()


def test_a_data_directory_brings_its_own_settings():
    metadata = {"objective": "sop", "ngram": 3, "whole_word_masking": True, "packing": "segment-pair",
                "sequence_length": 64}
    data = _data_config(PretrainConfig(train="d", out="o", model_type="roberta"), metadata, "sop")
    assert (data.objective, data.packing, data.ngram, data.whole_word_masking) == ("sop", "segment-pair", 3, True)
    old = _data_config(PretrainConfig(train="d", out="o", model_type="albert"), {"sequence_length": 64}, "nsp")
    assert (old.packing, old.ngram, old.whole_word_masking) == ("segment-pair", 1, False)  # written before them


@pytest.mark.parametrize("model_type, family", [("albert", "AlbertEncoder"), ("roberta", "RobertaEncoder"),
                                               ("distilbert", "DistilBertEncoder")])
def test_each_model_type_pretrains_its_own_family(corpus, model_type, family):
    out = corpus / model_type
    assert main(["pretrain", "--train", str(corpus / "corpus.txt"), "--vocab", str(corpus / "vocab.txt"),
                 "--model-type", model_type, "--preset", "tiny", "--steps", "2", "--batch-size", "4",
                 "--sequence-length", "16", "--out", str(out), "--verbose", "0"]) == 0
    encoder = kbert.load_pretrained(out)
    assert type(encoder).__name__ == family and encoder.bert_config.vocab_size == len(VOCAB)
    if model_type == "roberta":  # positions are counted after the vocabulary's own padding id
        assert encoder.bert_config.pad_token_id == VOCAB.index("[PAD]")
    # `--init` continues the family; a --model-type of another family is an error naming both.
    again = corpus / f"{model_type}_again"
    assert main(["pretrain", "--train", str(corpus / "corpus.txt"), "--init", str(out), "--steps", "1",
                 "--batch-size", "4", "--sequence-length", "16", "--out", str(again), "--verbose", "0"]) == 0
    assert type(kbert.load_pretrained(again)).__name__ == family
    other = "roberta" if model_type == "albert" else "albert"
    with pytest.raises(ValueError, match=f"--model-type {other} does not match"):
        build_encoder(len(VOCAB), init=str(out), model_type=other)


def test_raw_text_with_full_sentences_trains_masked_lm_alone(corpus):
    out = corpus / "run"
    assert main(["pretrain", "--train", str(corpus / "corpus.txt"), "--vocab", str(corpus / "vocab.txt"),
                 "--packing", "full-sentences", "--ngram", "2", "--whole-word-masking", "--preset", "tiny",
                 "--steps", "2", "--batch-size", "4", "--sequence-length", "16", "--out", str(out),
                 "--verbose", "0"]) == 0
    history = json.loads((out / "history.json").read_text())
    assert history["objective"] == "none" and "sentence_accuracy" not in history["final_metrics"]
    assert history["config"]["packing"] == "full-sentences" and history["steps"] == 2
