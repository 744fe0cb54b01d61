"""Checkpoints of other BERT-family models (ALBERT, RoBERTa) are refused by name, never loaded as BERT.

A RoBERTa checkpoint has BERT's tensor names, so before this check it loaded and computed another function
(its positions start after the padding id); an ALBERT one failed on "missing tensors" without saying why.
"""

import json

import pytest

import kbert
from kbert.config import MODEL_TYPES, BertConfig

transformers = pytest.importorskip("transformers")
pytest.importorskip("torch")

TINY = dict(vocab_size=40, hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=32,
            max_position_embeddings=40)


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory):
    root = tmp_path_factory.mktemp("families")
    models = {
        "roberta": transformers.RobertaModel(transformers.RobertaConfig(**TINY, type_vocab_size=1)),
        "albert": transformers.AlbertModel(transformers.AlbertConfig(**TINY, embedding_size=8)),
        "bert": transformers.BertModel(transformers.BertConfig(**TINY)),
    }
    for name, model in models.items():
        model.save_pretrained(root / name)
    return root


@pytest.mark.parametrize("family", ["roberta", "albert"])
def test_another_family_is_refused_by_name(checkpoints, family):
    with pytest.raises(ValueError, match=rf"model_type '{family}' is not a model kbert reads: it reads bert"):
        kbert.load_pretrained(checkpoints / family)


def test_a_bert_checkpoint_still_loads(checkpoints):
    assert json.loads((checkpoints / "bert" / "config.json").read_text())["model_type"] in MODEL_TYPES
    assert kbert.load_pretrained(checkpoints / "bert").count_params() > 0


def test_a_config_without_model_type_is_read_as_bert():
    config = BertConfig.from_dict({**TINY, "hidden_act": "gelu"})
    assert (config.hidden_size, config.num_hidden_layers) == (16, 2)


def test_a_google_albert_directory_is_named(tmp_path):
    (tmp_path / "albert_config.json").write_text(json.dumps(TINY))
    with pytest.raises(kbert.CheckpointError, match="Google ALBERT checkpoint"):
        kbert.load_pretrained(tmp_path)
