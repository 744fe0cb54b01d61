"""Google's TF1 ALBERT layout (google-research/albert), against transformers' PyTorch ALBERT.

No Google ALBERT checkpoint is at hand offline, so the tests write one the way the release is laid out: a random,
perturbed `AlbertForPreTraining`'s tensors under the release's names (mapped by hand below, from the release's
tensor list, not by kbert's own mapping), with Google's albert_config.json and model.ckpt-* files.
"""

import json

import numpy as np
import pytest

import kbert
from kbert.cli.main import main
from kbert.convert import checkpoints
from tests.convert.test_albert_roberta import ALBERT, assert_matches, hf_outputs, loading_problems, pair_batch, \
    perturbed

tf = pytest.importorskip("tensorflow")
torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

# Google's albert_config.json for ALBERT's shape: every field of the release's files, its "gelu" the tanh one.
GOOGLE_CONFIG = {
    "attention_probs_dropout_prob": 0, "hidden_act": "gelu", "hidden_dropout_prob": 0, "embedding_size": 16,
    "hidden_size": 32, "initializer_range": 0.02, "intermediate_size": 64, "max_position_embeddings": 40,
    "num_attention_heads": 4, "num_hidden_layers": 4, "num_hidden_groups": 2, "net_structure_type": 0,
    "gap_size": 0, "num_memory_blocks": 0, "inner_group_num": 2, "down_scale_factor": 1, "type_vocab_size": 2,
    "vocab_size": 100,
}
# An inner group's tensors: Google's name in the group -> the same layer in Hugging Face's `AlbertLayer`.
INNER_GROUP = {
    "attention_1/self/query": "attention.query", "attention_1/self/key": "attention.key",
    "attention_1/self/value": "attention.value", "attention_1/output/dense": "attention.dense",
    "LayerNorm": "attention.LayerNorm", "ffn_1/intermediate/dense": "ffn",
    "ffn_1/intermediate/output/dense": "ffn_output", "LayerNorm_1": "full_layer_layer_norm",
}
SPIECE = b"a SentencePiece model's bytes"


def release_names(groups, inner):
    """{Google's name: (AlbertForPreTraining's name, transpose)}. Google's dense kernels are (in, out), torch's
    Linear weights (out, in); tables and the sentence-order head are stored alike."""
    names = {f"bert/embeddings/{table}": (f"albert.embeddings.{table}.weight", False)
             for table in ("word_embeddings", "position_embeddings", "token_type_embeddings")}
    layers = {"bert/embeddings/LayerNorm": "albert.embeddings.LayerNorm",
              "bert/encoder/embedding_hidden_mapping_in": "albert.encoder.embedding_hidden_mapping_in",
              "bert/pooler/dense": "albert.pooler", "cls/predictions/transform/dense": "predictions.dense",
              "cls/predictions/transform/LayerNorm": "predictions.LayerNorm"}
    for g in range(groups):
        for j in range(inner):
            for google, hf in INNER_GROUP.items():
                layers[f"bert/encoder/transformer/group_{g}/inner_group_{j}/{google}"] = \
                    f"albert.encoder.albert_layer_groups.{g}.albert_layers.{j}.{hf}"
    for google, hf in layers.items():
        norm = google.endswith(("LayerNorm", "LayerNorm_1"))
        names[google + ("/gamma" if norm else "/kernel")] = (hf + ".weight", not norm)
        names[google + ("/beta" if norm else "/bias")] = (hf + ".bias", False)
    names["cls/predictions/output_bias"] = ("predictions.bias", False)
    names["cls/seq_relationship/output_weights"] = ("sop_classifier.classifier.weight", False)
    names["cls/seq_relationship/output_bias"] = ("sop_classifier.classifier.bias", False)
    return names


def release_tensors(model):
    state = {name: value.numpy() for name, value in model.state_dict().items()}
    names = release_names(GOOGLE_CONFIG["num_hidden_groups"], GOOGLE_CONFIG["inner_group_num"])
    # Every tensor but the decoder, which is tied to the word embeddings and `predictions.bias`.
    assert set(state) - {hf for hf, _ in names.values()} == {"predictions.decoder.weight", "predictions.decoder.bias"}
    return {google: state[hf].T if transpose else state[hf] for google, (hf, transpose) in names.items()}


def save_v2(prefix, tensors):
    tf.raw_ops.SaveV2(prefix=str(prefix), tensor_names=list(tensors), shape_and_slices=[""] * len(tensors),
                      tensors=[tf.constant(value) for value in tensors.values()])


@pytest.fixture(scope="module")
def release(tmp_path_factory):
    """(directory in Google's ALBERT layout, the AlbertForPreTraining it holds, its Google tensors)."""
    model = perturbed(transformers.AlbertForPreTraining(transformers.AlbertConfig(**ALBERT)))
    tensors = release_tensors(model)
    directory = tmp_path_factory.mktemp("albert_base_v2")
    (directory / "albert_config.json").write_text(json.dumps(GOOGLE_CONFIG))
    (directory / "30k-clean.model").write_bytes(SPIECE)
    # An older step with other weights, and the training state a pretraining checkpoint holds: both skipped.
    save_v2(directory / "model.ckpt-999", {name: 0 * value for name, value in tensors.items()})
    save_v2(directory / "model.ckpt-1234", {**tensors, "global_step": np.array(1234, np.int64),
                                            "bert/pooler/dense/kernel/adam_m": tensors["bert/pooler/dense/kernel"]})
    return directory, model, tensors


def test_google_albert_loads_and_matches_transformers(release):
    directory, model, _ = release
    assert checkpoints.detect_format(directory) == "google"
    encoder = kbert.load_pretrained(directory, model_type="albert")
    assert type(encoder) is kbert.AlbertEncoder
    config = encoder.bert_config
    assert (config.embedding_size, config.num_hidden_groups, config.inner_group_num, config.hidden_act) == \
        (16, 2, 2, "gelu_new")
    inputs = pair_batch("albert")
    assert inputs["padding_mask"].min() == 0
    assert_matches(encoder, model.albert, inputs)
    # Google's ALBERT "gelu" is the tanh approximation: read as the exact GELU, the outputs would drift.
    with pytest.raises(AssertionError):
        assert_matches(kbert.load_pretrained(directory, hidden_act="gelu"), model.albert, inputs)
    with pytest.raises(kbert.CheckpointError, match=r"holds a ALBERT checkpoint \(model_type 'albert'\), not the BERT"):
        kbert.load_pretrained(directory, model_type="bert")


def test_google_albert_heads_load_into_the_pretrainer(release):
    directory, model, _ = release
    pretrainer = kbert.load_pretrainer(directory, objective="sop")
    inputs = pair_batch("albert")
    positions = np.array([[1, 3, 6], [2, 4, 5]], "int32")
    out = pretrainer({**inputs, "masked_positions": positions})
    reference = hf_outputs(model, inputs)
    expected = np.take_along_axis(reference.prediction_logits.numpy(), positions[..., None], axis=1)
    np.testing.assert_allclose(out["mlm_logits"].numpy(), expected, atol=1e-4, rtol=0)
    np.testing.assert_allclose(out["sentence_logits"].numpy(), reference.sop_logits.numpy(), atol=1e-4, rtol=0)


def test_written_in_googles_layout_with_the_releases_names_and_shapes(release, tmp_path):
    directory, model, tensors = release
    pretrainer = kbert.load_pretrainer(directory, objective="sop")
    out = checkpoints.save_pretrained(pretrainer, tmp_path / "google", format="google",
                                      vocabulary=directory / "30k-clean.model")
    assert json.loads((out / "albert_config.json").read_text()) == GOOGLE_CONFIG
    assert (out / "spiece.model").read_bytes() == SPIECE and not (out / "bert_config.json").exists()
    reader = tf.train.load_checkpoint(str(out / "model.ckpt-best"))
    assert reader.get_variable_to_shape_map() == {name: list(value.shape) for name, value in tensors.items()}
    for name, value in tensors.items():
        np.testing.assert_allclose(reader.get_tensor(name), value, atol=1e-7, err_msg=name)
    assert_matches(kbert.load_pretrained(out), model.albert, pair_batch("albert"))


def test_convert_cli_takes_google_albert_to_transformers(release, tmp_path):
    directory, model, _ = release
    assert main(["convert", str(directory), "--out", str(tmp_path / "hf"), "--format", "hf"]) == 0
    assert (tmp_path / "hf" / "spiece.model").read_bytes() == SPIECE
    reloaded, problems = loading_problems("AlbertForPreTraining", tmp_path / "hf")
    assert problems == {}
    inputs = pair_batch("albert")
    np.testing.assert_allclose(hf_outputs(reloaded, inputs).sop_logits.numpy(),
                               hf_outputs(model, inputs).sop_logits.numpy(), atol=1e-5, rtol=0)


@pytest.mark.parametrize("field, value", [("down_scale_factor", 2), ("net_structure_type", 1), ("gap_size", 3),
                                          ("num_memory_blocks", 1), ("hidden_act", "swish")])
def test_albert_structures_kbert_does_not_build_are_refused(tmp_path, field, value):
    (tmp_path / "albert_config.json").write_text(json.dumps({**GOOGLE_CONFIG, field: value}))
    with pytest.raises(ValueError, match=rf"albert_config.json (sets|names) {field} {value!r}"):
        kbert.load_pretrained(tmp_path)


def test_what_googles_layout_cannot_say_is_refused(release, tmp_path):
    directory, _, _ = release
    # Google's ALBERT code has no exact GELU; Google never released RoBERTa.
    exact = kbert.load_pretrained(directory, hidden_act="gelu")
    with pytest.raises(ValueError, match="hidden_act 'gelu' has no name in Google's ALBERT code"):
        checkpoints.save_pretrained(exact, tmp_path / "exact", format="google")
    roberta = kbert.RobertaEncoder(vocab_size=20, hidden_size=8, num_hidden_layers=1, num_attention_heads=2,
                                   intermediate_size=16, max_position_embeddings=12)
    with pytest.raises(ValueError, match="written for BERT and ALBERT .* not RoBERTa"):
        checkpoints.save_pretrained(roberta, tmp_path / "roberta", format="google")
    # Both Google configs in one directory: the family is unknown.
    (tmp_path / "both").mkdir()
    for name in ("albert_config.json", "bert_config.json"):
        (tmp_path / "both" / name).write_text(json.dumps(GOOGLE_CONFIG))
    with pytest.raises(kbert.CheckpointError, match="holds both bert_config.json and albert_config.json"):
        kbert.load_pretrained(tmp_path / "both")
    # Several checkpoints, not all named by their step: which to read is unknown.
    (tmp_path / "two").mkdir()
    (tmp_path / "two" / "albert_config.json").write_text(json.dumps(GOOGLE_CONFIG))
    for prefix in ("model.ckpt-best", "model.ckpt-1000"):
        save_v2(tmp_path / "two" / prefix, {"bert/pooler/dense/bias": np.zeros(32, np.float32)})
    with pytest.raises(kbert.CheckpointError, match="several TF checkpoints and not all name their step"):
        kbert.load_pretrained(tmp_path / "two")
