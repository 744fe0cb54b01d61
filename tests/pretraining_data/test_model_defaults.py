"""The table of `--model-type` defaults: one place, TensorFlow-free, and given settings win."""

import os
import pathlib
import subprocess
import sys

import pytest

from kbert.pretraining_data.create_config import CreatePretrainingDataConfig
from kbert.pretraining_data.model_defaults import MODEL_DEFAULTS, MODEL_TYPES, model_defaults

ROOT = pathlib.Path(__file__).resolve().parents[2]


def resolved(**fields):
    config = CreatePretrainingDataConfig(input=["corpus.txt"], **fields)
    config.validate()
    return config.objective, config.packing, config.ngram, config.whole_word_masking, config.masking


def test_each_model_type_sets_its_defaults_and_bert_keeps_the_old_ones():
    assert MODEL_TYPES == ("bert", "albert", "roberta", "distilbert")
    assert resolved() == ("nsp", "segment-pair", 1, False, "static")  # the defaults before --model-type
    assert resolved(model_type="bert") == resolved()
    assert resolved(model_type="albert") == ("sop", "segment-pair", 3, True, "static")
    assert resolved(model_type="roberta") == ("none", "full-sentences", 1, False, "dynamic")
    assert resolved(model_type="distilbert") == ("none", "full-sentences", 1, False, "dynamic")
    assert all(set(table) == set(MODEL_DEFAULTS["bert"]) for table in MODEL_DEFAULTS.values())


def test_given_settings_win_and_packing_and_objective_follow_each_other():
    assert resolved(model_type="albert", ngram=1, masking="dynamic") == ("sop", "segment-pair", 1, True, "dynamic")
    assert resolved(model_type="roberta", objective="sop") == ("sop", "segment-pair", 1, False, "dynamic")
    assert resolved(packing="full-sentences") == ("none", "full-sentences", 1, False, "static")
    assert model_defaults("roberta", {"objective": None})["objective"] == "none"  # None is "not given"
    with pytest.raises(ValueError, match="no sentence pair for objective 'nsp'"):
        resolved(packing="full-sentences", objective="nsp")
    with pytest.raises(ValueError, match="model_type must be one of"):
        resolved(model_type="electra")


def test_the_table_loads_without_tensorflow():
    code = ("import sys, kbert.pretraining_data.model_defaults, kbert.pretraining_data.create_config, "
            "kbert.training.pretrain_config; assert 'tensorflow' not in sys.modules and 'numpy' not in sys.modules")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    result = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]


def test_layout_full_sentences_is_the_sentences_layout_packed_as_full_sentences():
    from kbert.pretraining_data.create_config import CreatePretrainingDataConfig
    from kbert.training.pretrain_config import PretrainConfig

    data = CreatePretrainingDataConfig(input=["c.txt"], vocab="v.txt", out="o", layout="full-sentences")
    assert (data.layout, data.packing, data.objective) == ("sentences", "full-sentences", "none")
    run = PretrainConfig(train="c.txt", out="o", layout="full-sentences")
    assert (run.layout, run.packing) == ("sentences", "full-sentences")
    with pytest.raises(ValueError, match="cannot go with --packing segment-pair"):
        PretrainConfig(train="c.txt", out="o", layout="full-sentences", packing="segment-pair")
