"""Reading sentence-transformers directories (the 2.x layout and later ones) and refusing what kbert cannot
reproduce; the written layout read back. Directories are built in ram:// (every path may be a URL)."""

import uuid

import numpy as np
import pytest

import kbert.file_io as file_io
from kbert.constants import POOLING_MODES
from kbert.convert.sentence_dense import SentenceDense, read_dense_weights
from kbert.convert.sentence_transformers import (SentenceTransformersConfig, is_sentence_transformers_dir,
                                                 read_sentence_transformers, write_sentence_transformers)

LEGACY = "sentence_transformers.models."
MODULES_V6 = [  # as sentence-transformers 6 writes them
    {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.base.modules.transformer.Transformer"},
    {"idx": 1, "name": "1", "path": "1_Pooling",
     "type": "sentence_transformers.sentence_transformer.modules.pooling.Pooling"},
    {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.base.modules.normalize.Normalize"},
]


def directory(files: dict) -> str:
    root = f"ram://st-{uuid.uuid4().hex}"
    for name, value in files.items():
        file_io.write_json(file_io.join(root, name), value)
    return root


def legacy_modules(*kinds: str, transformer_path: str = "") -> list[dict]:
    paths = {"Transformer": transformer_path, "Pooling": "1_Pooling"}
    return [{"idx": i, "name": str(i), "path": paths.get(k, f"{i}_{k}"), "type": LEGACY + k}
            for i, k in enumerate(kinds)]


def test_all_minilm_l6_v2(minilm):
    assert is_sentence_transformers_dir(minilm)
    assert read_sentence_transformers(minilm) == SentenceTransformersConfig("mean", True, 256, False, "")


@pytest.mark.parametrize("mode", POOLING_MODES)
@pytest.mark.parametrize("normalize", [True, False])
def test_written_directories_read_back(mode, normalize):
    root = f"ram://st-{uuid.uuid4().hex}"
    config = SentenceTransformersConfig(mode, normalize, 77)
    write_sentence_transformers(root, config, dimension=32)
    assert read_sentence_transformers(root) == config
    pooling = file_io.read_json(file_io.join(root, "1_Pooling", "config.json"))
    assert pooling["word_embedding_dimension"] == 32 and sum(v is True for v in pooling.values()) == 1


def test_the_layout_of_later_versions():
    root = directory({"modules.json": MODULES_V6,
                      "1_Pooling/config.json": {"embedding_dimension": 8, "pooling_mode": "max",
                                                "include_prompt": True},
                      "2_Normalize/config.json": {"module_input_name": "sentence_embedding",
                                                  "module_output_name": "sentence_embedding"},
                      "sentence_bert_config.json": {"transformer_task": "feature-extraction"},
                      # No max_seq_length: the tokenizer's, capped at the model's positions.
                      "tokenizer_config.json": {"model_max_length": 1024},
                      "config.json": {"max_position_embeddings": 512}})
    assert read_sentence_transformers(root) == SentenceTransformersConfig("max", True, 512, False, "")


def test_a_transformer_in_its_own_folder_and_the_default_mode():
    root = directory({"modules.json": legacy_modules("Transformer", "Pooling", transformer_path="0_Transformer"),
                      "1_Pooling/config.json": {"word_embedding_dimension": 8},  # no mode set: mean
                      "0_Transformer/sentence_bert_config.json": {"max_seq_length": 128, "do_lower_case": True}})
    assert read_sentence_transformers(root) == SentenceTransformersConfig("mean", False, 128, True, "0_Transformer")


def test_dense_modules_and_prompts_read_back():
    root = f"ram://st-{uuid.uuid4().hex}"
    dense = (SentenceDense(12, True, "tanh"), SentenceDense(8, False, "linear"))
    config = SentenceTransformersConfig("cls", True, 32, dense=dense, prompts={"query": "query: ", "doc": ""},
                                        default_prompt_name="query")
    rng = np.random.default_rng(0)
    weights = [[rng.normal(size=(16, 12)).astype(np.float32), rng.normal(size=12).astype(np.float32)],
               [rng.normal(size=(12, 8)).astype(np.float32)]]
    write_sentence_transformers(root, config, dimension=16, dense_weights=weights)
    again = read_sentence_transformers(root)
    assert again == SentenceTransformersConfig("cls", True, 32, dense=(SentenceDense(12, True, "tanh", "2_Dense"),
                                                                       SentenceDense(8, False, "linear", "3_Dense")),
                                               prompts={"query": "query: ", "doc": ""}, default_prompt_name="query")
    assert [m["path"] for m in file_io.read_json(f"{root}/modules.json")] == ["", "1_Pooling", "2_Dense", "3_Dense",
                                                                             "4_Normalize"]
    for module, want in zip(again.dense, weights):
        for got, array in zip(read_dense_weights(root, module), want, strict=True):
            np.testing.assert_array_equal(got, array)
    assert file_io.read_json(f"{root}/2_Dense/config.json") == {
        "in_features": 16, "out_features": 12, "bias": True, "activation_function": "torch.nn.modules.activation.Tanh"}


DENSE = {"in_features": 8, "out_features": 4, "bias": True, "activation_function": "torch.nn.modules.activation.Tanh"}


@pytest.mark.parametrize("files,message", [
    ({"modules.json": legacy_modules("Transformer", "Pooling", "LayerNorm", "Normalize")},
     r"module\(s\) \['sentence_transformers.models.LayerNorm'\] that kbert cannot reproduce \(sentence_transformers"
     r".models.LayerNorm: a layer normalisation of the sentence vector"),
    ({"modules.json": legacy_modules("Transformer", "WeightedLayerPooling", "Pooling")},
     "WeightedLayerPooling: it weighs the token vectors of every hidden layer"),
    ({"modules.json": legacy_modules("Transformer", "Pooling", "CNN")}, "CNN: a convolution over the token vectors"),
    ({"modules.json": legacy_modules("Transformer", "Pooling", "Normalize", "Dense")},
     r"the modules \['Transformer', 'Pooling', 'Normalize', 'Dense'\]"),
    ({"modules.json": legacy_modules("Transformer", "Pooling", "Dense"),
      "2_Dense/config.json": {**DENSE, "activation_function": "torch.nn.modules.activation.Softplus"}},
     "activation_function 'torch.nn.modules.activation.Softplus'"),
    ({"modules.json": legacy_modules("Transformer", "Pooling", "Dense"),
      "2_Dense/config.json": {**DENSE, "use_residual": True}}, "use_residual true"),
    ({"modules.json": legacy_modules("Transformer", "Pooling", "Dense"),
      "1_Pooling/config.json": {"word_embedding_dimension": 16}, "2_Dense/config.json": DENSE},
     "in_features 8 but the modules before it give vectors of 16"),
    ({"modules.json": legacy_modules("Transformer", "Pooling"),
      "1_Pooling/config.json": {"pooling_mode": "mean", "include_prompt": False},
      "config_sentence_transformers.json": {"prompts": {"query": "query: "}}},
     "include_prompt false: sentence-transformers leaves the prompt's tokens out of the pooling"),
    ({"modules.json": legacy_modules("Pooling", "Transformer")}, r"the modules \['Pooling', 'Transformer'\]"),
    ({"modules.json": legacy_modules("Transformer", "Pooling"),
      "1_Pooling/config.json": {"pooling_mode_cls_token": True, "pooling_mode_mean_tokens": True}},
     r"pooling modes \['cls', 'mean'\] are concatenated"),
    ({"modules.json": legacy_modules("Transformer", "Pooling"),
      "1_Pooling/config.json": {"pooling_mode_weightedmean_tokens": True}},
     "pooling mode 'weightedmean' is not one kbert reproduces"),
    ({"modules.json": legacy_modules("Transformer", "Pooling"), "1_Pooling/config.json": {"pooling_mode": "lasttoken"}},
     "pooling mode 'lasttoken'"),
    ({"modules.json": MODULES_V6, "2_Normalize/config.json": {"module_input_name": "token_embeddings"}},
     "module_input_name 'token_embeddings'"),
    ({"modules.json": MODULES_V6, "config_sentence_transformers.json": {"default_prompt_name": "query",
                                                                         "prompts": {"doc": ""}}},
     r"default_prompt_name 'query' is not one of the prompts \['doc'\]"),
    ({"modules.json": MODULES_V6, "sentence_bert_config.json": {"transformer_task": "text-generation"}},
     "transformer_task 'text-generation'"),
])
def test_what_kbert_cannot_reproduce_is_an_error_naming_it(files, message):
    with pytest.raises(ValueError, match=message):
        read_sentence_transformers(directory(files))


def test_not_a_sentence_transformers_directory():
    root = directory({"config.json": {"model_type": "bert"}})
    assert not is_sentence_transformers_dir(root)
    with pytest.raises(FileNotFoundError, match="no modules.json"):
        read_sentence_transformers(root)
