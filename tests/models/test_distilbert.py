"""DistilBERT as a family: Hugging Face's `DistilBertModel` and `DistilBertForMaskedLM` (random weights, written by
transformers) load into `DistilBertEncoder` and compute what transformers computes, write back in either layout,
tokenize as `DistilBertTokenizerFast`, and refuse what kbert does not build, by name."""

from __future__ import annotations

import json

import keras
import numpy as np
import pytest

import kbert
from kbert.config import DistilBertConfig, config_from_dict
from kbert.convert import checkpoints
from kbert.layers import token_packing
from layer_checks import run_standard_checks
from tests.conftest import TINY_VOCAB
from tests.family_checkpoints import distilbert_dir

transformers = pytest.importorskip("transformers")
torch = pytest.importorskip("torch")

TEXTS = ["the cat sat on the mat", "a good dog ran", "unaffable cats !", "the"]
PAIRS = ["a bad dog", "the cat sat", "dog , cat ?", "mat mat mat mat"]


@pytest.fixture(scope="module")
def distilbert(tmp_path_factory):
    return distilbert_dir(tmp_path_factory.mktemp("distilbert") / "model", TINY_VOCAB)


@pytest.fixture(scope="module")
def distilbert_mlm(tmp_path_factory):
    return distilbert_dir(tmp_path_factory.mktemp("distilbert") / "mlm", TINY_VOCAB, masked_lm=True)


def hf_batch(directory, texts, pairs=None):
    """transformers' DistilBERT tokenizer's padded batch, as numpy arrays."""
    tokenizer = transformers.DistilBertTokenizerFast.from_pretrained(str(directory))
    return {name: np.asarray(value) for name, value in tokenizer(texts, pairs, padding=True).items()}


def last_hidden_state(directory, batch):
    model = transformers.DistilBertModel.from_pretrained(str(directory)).eval()
    with torch.no_grad():
        return model(input_ids=torch.tensor(batch["input_ids"]),
                     attention_mask=torch.tensor(batch["attention_mask"])).last_hidden_state.numpy()


def kbert_inputs(batch, segment_ids=None):
    token_ids = batch["input_ids"].astype("int32")
    return {"token_ids": token_ids, "segment_ids": np.zeros_like(token_ids) if segment_ids is None else segment_ids,
            "padding_mask": batch["attention_mask"].astype("int32")}


def test_config_reads_hugging_face_names(distilbert):
    written = json.loads((distilbert / "config.json").read_text())
    assert {"dim", "n_layers", "n_heads", "hidden_dim"} <= set(written) and "hidden_size" not in written
    config = checkpoints.read_config(distilbert)
    assert type(config) is DistilBertConfig
    assert (config.hidden_size, config.num_hidden_layers, config.num_attention_heads, config.intermediate_size,
            config.type_vocab_size, config.hidden_dropout_prob) == (32, 2, 2, 64, 0, 0.0)
    # kbert's own config file keeps BERT's names and reads back equal.
    assert config_from_dict({"model_type": "distilbert", **config.to_dict()}) == config
    assert DistilBertConfig.from_preset("base").num_hidden_layers == 6


def test_unsupported_settings_are_refused_by_name(distilbert):
    written = json.loads((distilbert / "config.json").read_text())
    with pytest.raises(ValueError, match="sets sinusoidal_pos_embds true: kbert builds DistilBERT with learned"):
        config_from_dict({**written, "sinusoidal_pos_embds": True})
    with pytest.raises(ValueError, match="DistilBERT has no segment table: type_vocab_size must be 0, got 2"):
        DistilBertConfig(type_vocab_size=2)
    with pytest.raises(ValueError, match="fixes LayerNorm epsilon 1e-12; this config's is 1e-05"):
        DistilBertConfig(layer_norm_eps=1e-5).hf_fields()
    encoder = kbert.DistilBertEncoder(vocab_size=20, hidden_size=8, num_hidden_layers=1, num_attention_heads=2,
                                      intermediate_size=16, max_position_embeddings=8)
    with pytest.raises(TypeError, match="not a DistilBertEncoder"):
        kbert.to_keras_hub(encoder)
    with pytest.raises(ValueError, match="Google's TF1 layout is written for BERT and ALBERT"):
        kbert.save_pretrained(encoder, distilbert.parent / "google", format="google")
    with pytest.raises(kbert.CheckpointError, match=r"holds a DistilBERT checkpoint \(model_type 'distilbert'\), "
                                                    r"not the BERT one asked for"):
        kbert.load_pretrained(distilbert, model_type="bert")


def test_matches_distilbert_model_with_padding(distilbert, recwarn):
    encoder = kbert.load_pretrained(distilbert)
    assert type(encoder) is kbert.DistilBertEncoder and encoder.embeddings.segment_embedding is None
    assert not [w for w in recwarn if "pooler" in str(w.message)]  # no DistilBERT checkpoint holds one
    batch = hf_batch(distilbert, TEXTS)
    mask = batch["attention_mask"]
    assert mask.min() == 0  # the batch is padded
    want = last_hidden_state(distilbert, batch) * mask[..., None]
    # Inference runs the real tokens alone; the functional (training) graph runs the padded batch.
    inference = encoder(kbert_inputs(batch), training=False)["sequence_output"].numpy()
    with token_packing.padded():
        padded = encoder(kbert_inputs(batch), training=False)["sequence_output"].numpy()
    np.testing.assert_allclose(inference * mask[..., None], want, atol=1e-4)
    np.testing.assert_allclose(padded * mask[..., None], want, atol=1e-4)


def test_pairs_tokenize_as_transformers_and_segments_change_nothing(distilbert):
    tokenizer = kbert.load_tokenizer(distilbert)
    assert isinstance(tokenizer, kbert.BertTokenizer) and tokenizer.lowercase
    for pairs in (None, PAIRS):
        want = hf_batch(distilbert, TEXTS, pairs)
        assert "token_type_ids" not in want  # DistilBERT's tokenizer emits none: the model has no segments
        packed = kbert.BertPreprocessor(tokenizer, sequence_length=want["input_ids"].shape[1])(
            TEXTS if pairs is None else (TEXTS, pairs))
        np.testing.assert_array_equal(packed["token_ids"].numpy(), want["input_ids"])
        np.testing.assert_array_equal(packed["padding_mask"].numpy(), want["attention_mask"])
    # BERT's packing gives the second text segment 1; DistilBERT does not read it.
    assert packed["segment_ids"].numpy().any()
    encoder = kbert.load_pretrained(distilbert)
    ours = encoder({name: packed[name] for name in ("token_ids", "segment_ids", "padding_mask")})
    mask = want["attention_mask"][..., None]
    np.testing.assert_allclose(ours["sequence_output"].numpy() * mask, last_hidden_state(distilbert, want) * mask,
                               atol=1e-4)


def test_written_back_in_both_layouts(distilbert, tmp_path):
    encoder = kbert.load_pretrained(distilbert)
    batch = hf_batch(distilbert, TEXTS)
    want = last_hidden_state(distilbert, batch)
    kbert.save_pretrained(encoder, tmp_path / "hf", format="hf", vocabulary=str(distilbert / "vocab.txt"))
    config = json.loads((tmp_path / "hf" / "config.json").read_text())
    assert config["architectures"] == ["DistilBertModel"] and config["dim"] == 32 and "hidden_size" not in config
    model, info = transformers.DistilBertModel.from_pretrained(str(tmp_path / "hf"), output_loading_info=True)
    assert not any(info.values()), info  # no missing, unexpected or mismatched tensor
    np.testing.assert_allclose(last_hidden_state(tmp_path / "hf", batch), want, atol=1e-6)
    # kbert's own layout keeps the pooler, which fine-tuning trains.
    kbert.save_pretrained(encoder, tmp_path / "kbert")
    again = kbert.load_pretrained(tmp_path / "kbert")
    np.testing.assert_array_equal(again.pooler.kernel.numpy(), encoder.pooler.kernel.numpy())


def test_masked_lm_heads_load_and_write_back(distilbert_mlm, tmp_path):
    pretrainer = kbert.load_pretrainer(distilbert_mlm, objective="none")
    batch = hf_batch(distilbert_mlm, TEXTS)
    positions = np.array([[1, 2], [1, 3], [2, 1], [1, 0]], "int32")
    ours = pretrainer({**kbert_inputs(batch), "masked_positions": positions})["mlm_logits"].numpy()
    reference = transformers.DistilBertForMaskedLM.from_pretrained(str(distilbert_mlm)).eval()
    with torch.no_grad():
        logits = reference(input_ids=torch.tensor(batch["input_ids"]),
                           attention_mask=torch.tensor(batch["attention_mask"])).logits.numpy()
    np.testing.assert_allclose(ours, np.take_along_axis(logits, positions[..., None], axis=1), atol=1e-4)
    kbert.save_pretrained(pretrainer, tmp_path / "hf", format="hf")
    assert json.loads((tmp_path / "hf" / "config.json").read_text())["architectures"] == ["DistilBertForMaskedLM"]
    _, info = transformers.DistilBertForMaskedLM.from_pretrained(str(tmp_path / "hf"), output_loading_info=True)
    assert not any(info.values()), info
    with pytest.raises(ValueError, match="DistilBertForMaskedLM has no sentence head"):
        kbert.save_pretrained(kbert.BertPretrainer(pretrainer.encoder, objective="nsp"), tmp_path / "nsp", format="hf")


def test_encoder_standard_checks():
    encoder = kbert.DistilBertEncoder.from_preset("tiny", vocab_size=len(TINY_VOCAB), max_position_embeddings=16,
                                                  hidden_size=16, num_attention_heads=2, intermediate_size=32)
    token_ids = np.array([[2, 5, 6, 3, 7, 3], [2, 9, 3, 0, 0, 0]], "int32")
    run_standard_checks(encoder, {"token_ids": token_ids, "segment_ids": np.array([[0, 0, 0, 0, 1, 1]] * 2, "int32"),
                                  "padding_mask": (token_ids > 0).astype("int32")})
    assert type(keras.saving.deserialize_keras_object(keras.saving.serialize_keras_object(encoder))) is type(encoder)


def test_hub_name_loads_from_the_cache_offline(distilbert, tmp_path, monkeypatch):
    """`kbert.load_pretrained("ORG/NAME")` and `"hf://ORG/NAME"`: fetched once from the stand-in Hub into the Hugging
    Face cache, then read from there with HF_HUB_OFFLINE=1 and the Hub gone, equal to transformers."""
    pytest.importorskip("huggingface_hub")
    from huggingface_hub import constants

    from kbert.file_io import model_source
    from tests.hub_server import serving_repositories

    with serving_repositories({"org/tiny-distilbert": distilbert}, tmp_path, monkeypatch):
        model_source.resolve_source("hf://org/tiny-distilbert")  # fills the cache
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    batch = hf_batch(distilbert, TEXTS)
    want = last_hidden_state(distilbert, batch) * batch["attention_mask"][..., None]
    for name in ("hf://org/tiny-distilbert", "org/tiny-distilbert"):
        model_source.forget_resolved()
        encoder = kbert.load_pretrained(name)
        assert type(encoder) is kbert.DistilBertEncoder
        assert model_source.resolve_model(name).startswith(str(tmp_path / "hf-cache"))
        packed = kbert.BertPreprocessor(kbert.load_tokenizer(name), sequence_length=batch["input_ids"].shape[1])(TEXTS)
        np.testing.assert_array_equal(packed["token_ids"].numpy(), batch["input_ids"])
        got = encoder(kbert_inputs(batch))["sequence_output"].numpy() * batch["attention_mask"][..., None]
        np.testing.assert_allclose(got, want, atol=1e-4)
    model_source.forget_resolved()
