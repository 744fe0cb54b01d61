"""Loading and saving checkpoints, against transformers' PyTorch BertModel as the independent reference."""

import json
import shutil

import numpy as np
import pytest

import kbert
from kbert.convert import checkpoints, names

SENTENCES = [
    "The quick brown fox jumps over the lazy dog.",
    "BERT reads a sentence in both directions at once, unlike a left-to-right language model!",
    "Short one.",
    "Paris is the capital of France; Berlin is the capital of Germany.",
]


@pytest.fixture(scope="module")
def reference(minilm):
    """HF tokenizer ids and PyTorch BertModel outputs for SENTENCES."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    tokenizer = transformers.BertTokenizerFast.from_pretrained(str(minilm))
    batch = tokenizer(SENTENCES[:2], SENTENCES[2:], padding=True, return_tensors="pt")
    model = transformers.BertModel.from_pretrained(str(minilm)).eval()
    with torch.no_grad():
        out = model(**batch)
    inputs = {
        "token_ids": batch["input_ids"].numpy().astype("int32"),
        "segment_ids": batch["token_type_ids"].numpy().astype("int32"),
        "padding_mask": batch["attention_mask"].numpy().astype("int32"),
    }
    return inputs, out.last_hidden_state.numpy(), out.pooler_output.numpy()


def assert_matches_reference(encoder, reference, atol=1e-4):
    inputs, sequence, pooled = reference
    out = encoder(inputs)
    mask = inputs["padding_mask"].astype(bool)
    seq_diff = np.abs(out["sequence_output"].numpy()[mask] - sequence[mask]).max()
    pool_diff = np.abs(out["pooled_output"].numpy() - pooled).max()
    assert seq_diff <= atol and pool_diff <= atol, (seq_diff, pool_diff)
    return seq_diff, pool_diff


@pytest.fixture(scope="module")
def minilm_encoder(minilm):
    return kbert.load_pretrained(minilm)


def _hf_outputs(path):
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    tokenizer = transformers.BertTokenizerFast.from_pretrained(str(path))
    batch = tokenizer(SENTENCES[:2], SENTENCES[2:], padding=True, return_tensors="pt")
    with torch.no_grad():
        out = transformers.BertModel.from_pretrained(str(path)).eval()(**batch)
    inputs = {"token_ids": batch["input_ids"].numpy().astype("int32"),
              "segment_ids": batch["token_type_ids"].numpy().astype("int32"),
              "padding_mask": batch["attention_mask"].numpy().astype("int32")}
    return inputs, out.last_hidden_state.numpy(), out.pooler_output.numpy()


@pytest.mark.parametrize("hidden_act", ["gelu_new", "gelu_pytorch_tanh", "relu"])
def test_every_hf_hidden_act_loads_and_matches_transformers(minilm, reference, tmp_path, hidden_act):
    # all-MiniLM-L6-v2 with another activation written in its config.json: transformers and kbert both
    # run the edited model, and must agree.
    for name in ("model.safetensors", "vocab.txt", "tokenizer.json", "tokenizer_config.json",
                 "special_tokens_map.json"):
        shutil.copy(minilm / name, tmp_path / name)
    config = json.loads((minilm / "config.json").read_text())
    assert config["hidden_act"] == "gelu"
    (tmp_path / "config.json").write_text(json.dumps({**config, "hidden_act": hidden_act}))
    encoder = kbert.load_pretrained(tmp_path)
    assert encoder.bert_config.hidden_act == hidden_act
    edited = _hf_outputs(tmp_path)
    assert_matches_reference(encoder, edited, atol=1e-4)
    # The activation is really used: the exact-GELU outputs are far from these.
    assert np.abs(edited[1] - reference[1]).max() > 1e-3
    # Written back in HF's layout, the config still names it and transformers reads it.
    checkpoints.save_pretrained(encoder, tmp_path / "again", format="hf")
    assert json.loads((tmp_path / "again" / "config.json").read_text())["hidden_act"] == hidden_act


def test_hf_safetensors_matches_pytorch(minilm_encoder, reference):
    # Two sentence pairs, padded: exercises segments and the padding mask.
    assert reference[0]["segment_ids"].max() == 1 and reference[0]["padding_mask"].min() == 0
    assert_matches_reference(minilm_encoder, reference)


def test_google_checkpoint_loads_to_same_outputs(minilm, minilm_encoder, reference, tmp_path):
    tensors = checkpoints.encoder_tensors(minilm_encoder)
    # A Google pretraining checkpoint also holds heads and optimizer state; heads are kept, state skipped.
    hidden = minilm_encoder.bert_config.hidden_size
    tensors["cls/seq_relationship/output_weights"] = np.ones((2, hidden), np.float32)
    tensors["cls/seq_relationship/output_bias"] = np.zeros((2,), np.float32)
    tensors["bert/pooler/dense/kernel/adam_m"] = np.zeros((hidden, hidden), np.float32)
    tensors["global_step"] = np.array(7, np.int64)
    google_dir = checkpoints.write_google_checkpoint(
        tensors, minilm_encoder.bert_config, tmp_path / "uncased_L-6_H-384_A-12", vocabulary=minilm / "vocab.txt"
    )
    assert (google_dir / "bert_config.json").is_file() and (google_dir / "vocab.txt").is_file()
    assert checkpoints.detect_format(google_dir) == "google"
    assert_matches_reference(kbert.load_pretrained(google_dir), reference)
    heads = checkpoints.read_pretraining_heads(google_dir)
    assert sorted(heads) == ["cls/seq_relationship/output_bias", "cls/seq_relationship/output_weights"]


def test_google_names_are_tf1_names(minilm_encoder):
    tensors = checkpoints.encoder_tensors(minilm_encoder)
    assert tensors["bert/encoder/layer_5/attention/self/query/kernel"].shape == (384, 384)
    assert tensors["bert/encoder/layer_0/intermediate/dense/kernel"].shape == (384, 1536)
    assert tensors["bert/embeddings/word_embeddings"].shape == (30522, 384)
    assert len(tensors) == 5 + 2 + 6 * 16


def test_kbert_and_hf_save_round_trip(minilm_encoder, reference, tmp_path):
    checkpoints.save_pretrained(minilm_encoder, tmp_path / "kbert")
    assert_matches_reference(kbert.load_pretrained(tmp_path / "kbert"), reference)

    checkpoints.save_pretrained(minilm_encoder, tmp_path / "hf", format="hf")
    assert checkpoints.detect_format(tmp_path / "hf") == "hf"
    assert_matches_reference(kbert.load_pretrained(tmp_path / "hf"), reference)
    # The HF layout is read by transformers itself: users can take their weights back out.
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    model = transformers.BertModel.from_pretrained(str(tmp_path / "hf")).eval()
    inputs, sequence, _ = reference
    with torch.no_grad():
        out = model(
            input_ids=torch.tensor(inputs["token_ids"]).long(),
            token_type_ids=torch.tensor(inputs["segment_ids"]).long(),
            attention_mask=torch.tensor(inputs["padding_mask"]).long(),
        ).last_hidden_state.numpy()
    mask = inputs["padding_mask"].astype(bool)
    assert np.abs(out[mask] - sequence[mask]).max() <= 1e-5


def test_pytorch_bin_read_without_running_pickled_code(minilm, reference, tmp_path):
    torch = pytest.importorskip("torch")
    import safetensors.torch

    state = safetensors.torch.load_file(str(minilm / "model.safetensors"))
    shutil.copy(minilm / "config.json", tmp_path / "config.json")
    torch.save(state, tmp_path / "pytorch_model.bin")
    assert_matches_reference(kbert.load_pretrained(tmp_path), reference)

    class Evil:
        def __reduce__(self):
            return (print, ("pwned",))

    torch.save({"x": Evil()}, tmp_path / "pytorch_model.bin")
    with pytest.raises(checkpoints.CheckpointError, match="safely"):
        kbert.load_pretrained(tmp_path)


def test_keras_hub_parity(minilm_encoder, reference):
    backbone = kbert.to_keras_hub(minilm_encoder)  # exact GELU on keras-hub's side
    assert_matches_reference(backbone, reference, atol=1e-4)
    back = kbert.from_keras_hub(backbone)
    assert_matches_reference(back, reference)
    # With keras-hub's own tanh-approximate GELU the outputs drift by about 1e-3.
    approximate = kbert.to_keras_hub(minilm_encoder, exact_gelu=False)
    with pytest.raises(AssertionError):
        assert_matches_reference(approximate, reference, atol=1e-4)


def tiny_encoder():
    return kbert.BertEncoder(vocab_size=24, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                             intermediate_size=32, max_position_embeddings=16)


def test_missing_extra_and_misshaped_tensors_are_named(tmp_path):
    encoder = tiny_encoder()
    tensors = checkpoints.encoder_tensors(encoder)
    bad = dict(tensors)
    del bad["bert/encoder/layer_1/output/dense/bias"]
    bad["bert/encoder/layer_9/output/dense/bias"] = np.zeros(16, np.float32)
    bad["bert/pooler/dense/kernel"] = np.zeros((16, 8), np.float32)
    with pytest.raises(checkpoints.CheckpointError) as error:
        checkpoints.assign_encoder_weights(tiny_encoder(), bad)
    message = str(error.value)
    assert "layer_1/output/dense/bias" in message and "layer_9/output/dense/bias" in message
    assert "bert/pooler/dense/kernel has shape (16, 8)" in message

    # A config that disagrees with the weights (wrong vocab size).
    checkpoints.save_pretrained(encoder, tmp_path / "ok")
    config = json.loads((tmp_path / "ok" / "kbert_config.json").read_text())
    config["vocab_size"] = 30
    (tmp_path / "ok" / "kbert_config.json").write_text(json.dumps(config))
    with pytest.raises(checkpoints.CheckpointError, match="word_embeddings has shape"):
        kbert.load_pretrained(tmp_path / "ok")


def test_corrupt_and_missing_files(tmp_path):
    checkpoints.save_pretrained(tiny_encoder(), tmp_path / "ok")
    weights = tmp_path / "ok" / checkpoints.KBERT_WEIGHTS
    weights.write_bytes(weights.read_bytes()[: weights.stat().st_size // 2])  # truncated download
    with pytest.raises(checkpoints.CheckpointError, match="Cannot read"):
        kbert.load_pretrained(tmp_path / "ok")
    with pytest.raises(FileNotFoundError):
        kbert.load_pretrained(tmp_path / "nope")
    (tmp_path / "empty").mkdir()
    with pytest.raises(checkpoints.CheckpointError, match="no BERT config"):
        kbert.load_pretrained(tmp_path / "empty")
    (tmp_path / "hf").mkdir()
    (tmp_path / "hf" / "config.json").write_text("{not json")
    with pytest.raises(ValueError, match="not valid JSON"):
        kbert.load_pretrained(tmp_path / "hf")
    (tmp_path / "google").mkdir()
    (tmp_path / "google" / "bert_config.json").write_text(json.dumps(tiny_encoder().bert_config.to_dict()))
    (tmp_path / "google" / "bert_model.ckpt.index").write_bytes(b"garbage")
    with pytest.raises(checkpoints.CheckpointError, match="Cannot read TF checkpoint"):
        kbert.load_pretrained(tmp_path / "google")


def test_hf_name_mapping_round_trip():
    for google in ["bert/encoder/layer_3/attention/self/key/kernel", "bert/embeddings/LayerNorm/gamma",
                   "bert/embeddings/token_type_embeddings", "cls/predictions/output_bias",
                   "cls/seq_relationship/output_weights", "cls/predictions/transform/dense/kernel"]:
        hf, transpose = names.google_to_hf(google)
        assert names.hf_to_google(hf) == (google, transpose)
        assert names.hf_to_google("bert." + hf) == (google, transpose)
    assert names.hf_to_google("embeddings.position_ids") is None


@pytest.mark.parametrize("dtype", [None, "mixed_bfloat16"])
def test_load_pretrained_gives_the_weights_of_building_then_assigning(tmp_path, dtype):
    """`load_pretrained` builds without random initial values and fills the variables from the checkpoint:
    every variable (weights and dropout seeds), and the random head built after it, as the old path had."""
    import keras

    from kbert.tasks.classification_model import BertClassifier

    checkpoints.save_pretrained(tiny_encoder(), tmp_path / "ckpt")
    config, tensors = checkpoints.read_checkpoint(tmp_path / "ckpt")
    built = []
    for load in ("build then assign", "load_pretrained"):
        keras.utils.set_random_seed(7)
        if load == "load_pretrained":
            encoder = kbert.load_pretrained(tmp_path / "ckpt", dtype=dtype)
        else:
            encoder = kbert.BertEncoder(**config.to_dict(), dtype=dtype)
            checkpoints.assign_encoder_weights(encoder, tensors)
        built.append(BertClassifier(encoder, 3))
    old, new = built
    assert [v.path.split("/")[-1] for v in new.variables] == [v.path.split("/")[-1] for v in old.variables]
    for a, b in zip(old.variables, new.variables):
        assert a.dtype == b.dtype and np.array_equal(a.numpy(), b.numpy()), a.path
    for name, array in tensors.items():
        variable, shape = names.encoder_variables(new.encoder)[name]
        np.testing.assert_array_equal(np.reshape(variable.numpy(), shape), array)
    with keras.StatelessScope():  # nothing is left waiting for an initial value
        pass
    ids = np.array([[2, 5, 6, 3, 0]], "int32")
    inputs = {"token_ids": ids, "segment_ids": 0 * ids, "padding_mask": (ids > 0).astype("int32")}
    np.testing.assert_array_equal(old(inputs).numpy(), new(inputs).numpy())
