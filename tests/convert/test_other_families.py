"""A checkpoint of one family (BERT, ALBERT, RoBERTa, DistilBERT) never loads into another family's encoder.

A RoBERTa checkpoint has BERT's tensors and shapes, so loaded as BERT it would run and compute another function
(its positions start after the padding id): the worst outcome there is. The family comes from the config's
`model_type`; asking for another is an error naming both, and the tensor names themselves differ by family, so
even filling an encoder by hand from another family's tensors fails.
"""

import json

import numpy as np
import pytest

import kbert
from kbert.config import (CONFIG_CLASSES, MODEL_TYPES, AlbertConfig, BertConfig, DistilBertConfig, RobertaConfig,
                          config_from_dict)
from kbert.convert import checkpoints
from kbert.models.families import FAMILIES, encoder_class

transformers = pytest.importorskip("transformers")
pytest.importorskip("torch")

TINY = dict(vocab_size=40, hidden_size=16, num_hidden_layers=2, num_attention_heads=2, intermediate_size=32,
            max_position_embeddings=40)
CLASSES = {"bert": kbert.BertEncoder, "albert": kbert.AlbertEncoder, "roberta": kbert.RobertaEncoder,
           "distilbert": kbert.DistilBertEncoder}
FAMILY_NAMES = {"bert": "BERT", "albert": "ALBERT", "roberta": "RoBERTa", "distilbert": "DistilBERT"}
# Segment rows of each family's encoder built here: DistilBERT has none.
SEGMENTS = {"bert": 1, "albert": 1, "roberta": 1, "distilbert": 0}


@pytest.fixture(scope="module")
def checkpoints_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("families")
    models = {
        "roberta": transformers.RobertaModel(transformers.RobertaConfig(**TINY, type_vocab_size=1)),
        "albert": transformers.AlbertModel(transformers.AlbertConfig(**TINY, embedding_size=8)),
        "bert": transformers.BertModel(transformers.BertConfig(**TINY)),
        "distilbert": transformers.DistilBertModel(transformers.DistilBertConfig(
            vocab_size=40, dim=16, n_layers=2, n_heads=2, hidden_dim=32, max_position_embeddings=40)),
    }
    for name, model in models.items():
        model.save_pretrained(root / name)
    return root


@pytest.mark.parametrize("family", MODEL_TYPES)
def test_each_family_loads_as_its_own_class(checkpoints_dir, family):
    assert json.loads((checkpoints_dir / family / "config.json").read_text())["model_type"] == family
    assert type(kbert.load_pretrained(checkpoints_dir / family)) is CLASSES[family]
    assert type(kbert.load_pretrained(checkpoints_dir / family, model_type=family)) is CLASSES[family]


@pytest.mark.parametrize("source, target", [(s, t) for s in MODEL_TYPES for t in MODEL_TYPES if s != t])
def test_a_checkpoint_never_loads_into_another_family(checkpoints_dir, source, target):
    directory = checkpoints_dir / source
    with pytest.raises(kbert.CheckpointError,
                       match=rf"holds a {FAMILY_NAMES[source]} checkpoint \(model_type '{source}'\), not the "
                             rf"{FAMILY_NAMES[target]} one asked for \(model_type '{target}'\)"):
        kbert.load_pretrained(directory, model_type=target)
    # By hand: the family's own tensor names do not fit another family's encoder (RoBERTa's are scoped apart
    # from BERT's although the shapes agree).
    config, tensors = checkpoints.read_checkpoint(directory)
    fields = {k: v for k, v in config.to_dict().items() if k in {"vocab_size", "hidden_size", "num_hidden_layers",
                                                                 "num_attention_heads", "intermediate_size"}}
    segments = SEGMENTS[target] if "distilbert" in (source, target) else config.type_vocab_size
    encoder = CLASSES[target](**fields, max_position_embeddings=40, type_vocab_size=segments)
    with pytest.raises(kbert.CheckpointError, match=rf"does not fit the {CLASSES[target].__name__}: missing tensors"):
        checkpoints.assign_encoder_weights(encoder, tensors)


def test_kbert_checkpoints_carry_their_family(tmp_path):
    for family, cls in CLASSES.items():
        checkpoints.save_pretrained(cls(**TINY, type_vocab_size=SEGMENTS[family]), tmp_path / family)
        assert json.loads((tmp_path / family / checkpoints.KBERT_CONFIG).read_text())["model_type"] == family
        assert type(kbert.load_pretrained(tmp_path / family)) is cls
        with pytest.raises(kbert.CheckpointError, match="asked for"):
            kbert.load_pretrained(tmp_path / family, model_type="albert" if family != "albert" else "bert")


def test_an_unknown_family_is_named(checkpoints_dir, tmp_path):
    config = json.loads((checkpoints_dir / "bert" / "config.json").read_text())
    (tmp_path / "config.json").write_text(json.dumps({**config, "model_type": "deberta"}))
    message = r"model_type 'deberta' is not a model kbert reads: it reads bert, albert, roberta"
    with pytest.raises(ValueError, match=message):
        kbert.load_pretrained(tmp_path)
    with pytest.raises(ValueError, match=message):
        kbert.load_pretrained(checkpoints_dir / "bert", model_type="deberta")
    with pytest.raises(ValueError, match=message):
        encoder_class("deberta")


def test_config_classes_read_their_own_family_only():
    assert MODEL_TYPES == ("bert", "albert", "roberta", "distilbert")
    assert {t: config for t, (config, _) in FAMILIES.items()} == CONFIG_CLASSES
    for family, cls in CONFIG_CLASSES.items():
        assert type(config_from_dict({**TINY, "model_type": family})) is cls
        assert cls.from_dict(TINY).model_type == family  # no model_type (Google's files): the class's own
        for other in MODEL_TYPES:
            if other != family:
                with pytest.raises(ValueError, match=rf"model_type '{other}' is {CONFIG_CLASSES[other].family}'s, "
                                                     rf"not {cls.family}'s: {cls.__name__} does not read it"):
                    cls.from_dict({**TINY, "model_type": other})
    assert type(config_from_dict(TINY)) is BertConfig  # Google's bert_config.json


def test_family_defaults():
    albert, roberta, distilbert = AlbertConfig(), RobertaConfig(), DistilBertConfig()
    assert (albert.vocab_size, albert.embedding_size, albert.num_hidden_groups, albert.inner_group_num,
            albert.hidden_act) == (30000, 128, 1, 1, "gelu_new")
    assert (roberta.vocab_size, roberta.max_position_embeddings, roberta.type_vocab_size, roberta.layer_norm_eps,
            roberta.pad_token_id, roberta.max_sequence_length) == (50265, 514, 1, 1e-5, 1, 512)
    assert (distilbert.vocab_size, distilbert.num_hidden_layers, distilbert.hidden_size, distilbert.type_vocab_size,
            distilbert.layer_norm_eps, distilbert.max_sequence_length) == (30522, 6, 768, 0, 1e-12, 512)
    with pytest.raises(ValueError, match="num_hidden_groups must be at least 1"):
        AlbertConfig(num_hidden_groups=0)
    with pytest.raises(ValueError, match="pad_token_id 1 leaves no position"):
        RobertaConfig(max_position_embeddings=2)


def test_a_masked_lm_checkpoint_without_pooler_loads_with_a_fresh_one(tmp_path):
    model = transformers.RobertaForMaskedLM(transformers.RobertaConfig(**TINY, type_vocab_size=1))
    model.save_pretrained(tmp_path)
    with pytest.warns(UserWarning, match=r"no pooler \(roberta/pooler/dense/bias, roberta/pooler/dense/kernel\)"):
        encoder = kbert.load_pretrained(tmp_path)
    assert np.abs(encoder.pooler.kernel.numpy()).max() > 0  # initialised, not left empty
    # Only the whole pooler may be missing.
    _, tensors = checkpoints.read_checkpoint(tmp_path)
    del tensors["roberta/encoder/layer_1/output/dense/bias"]
    with pytest.raises(kbert.CheckpointError, match="missing tensors"):
        checkpoints.assign_encoder_weights(kbert.RobertaEncoder(**TINY), tensors)
