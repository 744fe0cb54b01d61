"""ALBERT and RoBERTa checkpoints in Hugging Face's layout, against transformers' PyTorch models.

Tiny random models, every tensor perturbed (LayerNorm starts at 1 and 0, biases at 0: a mapping that swapped
or dropped one would still pass on fresh weights), saved by transformers, read by kbert, and written back.
"""

import json

import numpy as np
import pytest

import kbert
from kbert.convert import checkpoints

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

SIZES = dict(vocab_size=100, hidden_size=32, num_attention_heads=4, intermediate_size=64, max_position_embeddings=40)
# Four layers in two groups of two inner blocks: layers 0, 1 run group 0, layers 2, 3 group 1 (both blocks each).
ALBERT = dict(SIZES, num_hidden_layers=4, embedding_size=16, num_hidden_groups=2, inner_group_num=2,
              hidden_act="gelu_new", hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
ROBERTA = dict(SIZES, num_hidden_layers=3, type_vocab_size=1, pad_token_id=1, layer_norm_eps=1e-5)
HF_CLASSES = {"albert": ("AlbertConfig", "AlbertModel"), "roberta": ("RobertaConfig", "RobertaModel")}


def perturbed(model, seed=0):
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.add_(0.2 * torch.randn(parameter.shape, generator=generator))
    return model.eval()


def hf_model(family, cls=None):
    config_class, model_class = HF_CLASSES[family]
    config = getattr(transformers, config_class)(**(ALBERT if family == "albert" else ROBERTA))
    return perturbed(getattr(transformers, cls or model_class)(config))


def pair_batch(family):
    """Two sentence pairs, right-padded: ALBERT's [CLS] a [SEP] b [SEP] with segments 0/1, RoBERTa's
    <s> a </s></s> b </s> (one segment), padding with the pad id."""
    rng = np.random.default_rng(1)
    rows, segments = [], []
    for a, b in ((5, 7), (3, 2)):
        first, second = rng.integers(5, 100, a).tolist(), rng.integers(5, 100, b).tolist()
        if family == "albert":
            rows.append([2, *first, 3, *second, 3])
            segments.append([0] * (a + 2) + [1] * (b + 1))
        else:
            rows.append([0, *first, 2, 2, *second, 2])
            segments.append([0] * len(rows[-1]))
    length, pad = max(map(len, rows)), 0 if family == "albert" else 1
    token_ids = np.array([row + [pad] * (length - len(row)) for row in rows], "int32")
    segment_ids = np.array([s + [0] * (length - len(s)) for s in segments], "int32")
    padding_mask = np.array([[1] * len(row) + [0] * (length - len(row)) for row in rows], "int32")
    return {"token_ids": token_ids, "segment_ids": segment_ids, "padding_mask": padding_mask}


def hf_outputs(model, inputs):
    with torch.no_grad():
        out = model(input_ids=torch.tensor(inputs["token_ids"]).long(),
                    token_type_ids=torch.tensor(inputs["segment_ids"]).long(),
                    attention_mask=torch.tensor(inputs["padding_mask"]).long())
    return out


def assert_matches(encoder, model, inputs, atol=1e-4):
    out, reference = encoder(inputs), hf_outputs(model, inputs)
    mask = inputs["padding_mask"].astype(bool)
    sequence = np.abs(out["sequence_output"].numpy()[mask] - reference.last_hidden_state.numpy()[mask]).max()
    pooled = np.abs(out["pooled_output"].numpy() - reference.pooler_output.numpy()).max()
    assert sequence <= atol and pooled <= atol, (sequence, pooled)


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """{(family, file format): (directory, transformers model)}: safetensors for both, pytorch_model.bin too."""
    root, out = tmp_path_factory.mktemp("hf"), {}
    for family in HF_CLASSES:
        model = hf_model(family)
        model.save_pretrained(root / family)
        assert (root / family / "model.safetensors").is_file()
        out[family, "safetensors"] = root / family, model
        bin_dir = root / f"{family}-bin"
        model.config.save_pretrained(bin_dir)
        torch.save(model.state_dict(), bin_dir / "pytorch_model.bin")
        out[family, "bin"] = bin_dir, model
    return out


@pytest.mark.parametrize("family, file_format", [("albert", "safetensors"), ("albert", "bin"),
                                                 ("roberta", "safetensors"), ("roberta", "bin")])
def test_hf_checkpoint_loads_into_its_family_and_matches_pytorch(saved, family, file_format):
    directory, model = saved[family, file_format]
    inputs = pair_batch(family)
    assert inputs["padding_mask"].min() == 0
    encoder = kbert.load_pretrained(directory)
    assert type(encoder) is {"albert": kbert.AlbertEncoder, "roberta": kbert.RobertaEncoder}[family]
    assert_matches(encoder, model, inputs)
    assert encoder is not None and kbert.load_pretrained(directory, model_type=family).count_params() == \
        encoder.count_params()


def test_albert_layers_share_their_groups_weights(saved):
    directory, model = saved["albert", "safetensors"]
    encoder = kbert.load_pretrained(directory)
    inputs = pair_batch("albert")
    group = [["group_0_inner_layer_0", "group_0_inner_layer_1"], ["group_1_inner_layer_0", "group_1_inner_layer_1"]]
    assert [[block.name for block in blocks] for blocks in encoder.layer_blocks()] == [group[0]] * 2 + [group[1]] * 2
    # 4 blocks' weights (2 groups x 2), not 8 (4 layers x 2), and as many as transformers' model.
    assert encoder.count_params() == sum(p.numel() for p in model.parameters())
    # The sharing is real in both: changing group 1's second block changes the outputs in both alike.
    with torch.no_grad():
        model.encoder.albert_layer_groups[1].albert_layers[1].ffn_output.bias.add_(0.5)
    block = encoder.transformer_groups[1][1]
    block._feedforward_output_dense.bias.assign(block._feedforward_output_dense.bias.numpy() + 0.5)
    assert_matches(encoder, model, inputs)


def test_roberta_positions_follow_the_padding_id(saved):
    """Real tokens take rows pad+1, pad+2, ...; a left-padded batch still matches transformers, which counts
    positions from the ids, not from the row start."""
    directory, model = saved["roberta", "safetensors"]
    encoder = kbert.load_pretrained(directory)
    inputs = pair_batch("roberta")
    ids = encoder.embeddings.position_ids(inputs["token_ids"]).numpy()
    lengths = inputs["padding_mask"].sum(1)
    for row, length in zip(ids, lengths):
        assert row.tolist() == list(range(2, length + 2)) + [1] * (len(row) - length)
    rolled = {name: np.array([np.roll(row, int(len(row) - n)) for row, n in zip(value, lengths)])
              for name, value in inputs.items()}
    assert rolled["padding_mask"][:, 0].min() == 0  # padding first
    out, reference = encoder(rolled), hf_outputs(model, rolled)
    mask = rolled["padding_mask"].astype(bool)
    assert np.abs(out["sequence_output"].numpy()[mask] - reference.last_hidden_state.numpy()[mask]).max() <= 1e-4


def loading_problems(model_class, directory):
    model, info = getattr(transformers, model_class).from_pretrained(str(directory), output_loading_info=True)
    return model.eval(), {kind: keys for kind, keys in info.items() if keys and kind != "error_msgs"}


@pytest.mark.parametrize("family", ["albert", "roberta"])
def test_written_back_in_hf_layout_transformers_reads_every_tensor(saved, tmp_path, family):
    directory, model = saved[family, "safetensors"]
    encoder = kbert.load_pretrained(directory)
    checkpoints.save_pretrained(encoder, tmp_path / "hf", format="hf")
    config = json.loads((tmp_path / "hf" / "config.json").read_text())
    assert config["model_type"] == family and config["architectures"] == [HF_CLASSES[family][1]]
    reloaded, problems = loading_problems(HF_CLASSES[family][1], tmp_path / "hf")
    assert problems == {}
    inputs = pair_batch(family)
    mask = inputs["padding_mask"].astype(bool)
    np.testing.assert_allclose(hf_outputs(reloaded, inputs).last_hidden_state.numpy()[mask],
                               hf_outputs(model, inputs).last_hidden_state.numpy()[mask], atol=1e-5, rtol=0)
    # kbert's own layout: the config names the family, and the family's class comes back.
    checkpoints.save_pretrained(encoder, tmp_path / "kbert")
    assert json.loads((tmp_path / "kbert" / checkpoints.KBERT_CONFIG).read_text())["model_type"] == family
    again = kbert.load_pretrained(tmp_path / "kbert")
    assert type(again) is type(encoder) and again.bert_config == encoder.bert_config
    assert_matches(again, model, inputs)


@pytest.mark.parametrize("family, hf_class, objective", [("albert", "AlbertForPreTraining", "sop"),
                                                         ("roberta", "RobertaForMaskedLM", "none")])
def test_pretraining_heads_load_and_write_back(tmp_path, family, hf_class, objective):
    """ALBERT's masked-LM head projects H -> E and decodes with the E-wide token table; RoBERTa's is BERT's."""
    model = hf_model(family, hf_class)
    model.save_pretrained(tmp_path / "hf")
    if family == "roberta":  # RobertaForMaskedLM holds no pooler: a fresh one, named
        with pytest.warns(UserWarning, match="no pooler"):
            pretrainer = kbert.load_pretrainer(tmp_path / "hf", objective=objective)
    else:
        pretrainer = kbert.load_pretrainer(tmp_path / "hf", objective=objective)
    assert type(pretrainer.encoder).__name__ == {"albert": "AlbertEncoder", "roberta": "RobertaEncoder"}[family]
    inputs = pair_batch(family)
    positions = np.array([[1, 3, 6], [2, 4, 5]], "int32")
    out = pretrainer({**inputs, "masked_positions": positions})
    reference = hf_outputs(model, inputs)
    logits = (reference.prediction_logits if family == "albert" else reference.logits).numpy()
    expected = np.take_along_axis(logits, positions[..., None], axis=1)
    np.testing.assert_allclose(out["mlm_logits"].numpy(), expected, atol=1e-4, rtol=0)
    if family == "albert":
        np.testing.assert_allclose(out["sentence_logits"].numpy(), reference.sop_logits.numpy(), atol=1e-4, rtol=0)
    checkpoints.save_pretrained(pretrainer, tmp_path / "back", format="hf")
    reloaded, problems = loading_problems(hf_class, tmp_path / "back")
    assert problems == {}
    np.testing.assert_allclose((hf_outputs(reloaded, inputs).prediction_logits if family == "albert"
                                else hf_outputs(reloaded, inputs).logits).numpy(), logits, atol=1e-4, rtol=0)


def test_a_roberta_sentence_head_has_no_hf_home(tmp_path):
    encoder = kbert.RobertaEncoder(**ROBERTA)
    with pytest.raises(ValueError, match="RobertaForMaskedLM has no sentence head"):
        checkpoints.save_pretrained(kbert.BertPretrainer(encoder, objective="nsp"), tmp_path, format="hf")
    with pytest.raises(ValueError, match="Google's TF1 layout is written for BERT and ALBERT .*, not RoBERTa"):
        checkpoints.write_google_checkpoint(checkpoints.encoder_tensors(encoder), encoder.bert_config, tmp_path)


@pytest.mark.parametrize("family", ["albert", "roberta"])
def test_every_google_name_has_one_hf_name_and_back(family):
    from kbert.convert import names

    encoder = {"albert": kbert.AlbertEncoder(**ALBERT), "roberta": kbert.RobertaEncoder(**ROBERTA)}[family]
    heads = kbert.BertPretrainer(encoder, objective="sop" if family == "albert" else "none").head_tensors()
    google = [*names.encoder_variables(encoder), *heads]
    hf = [names.google_to_hf(name, family) for name in google]
    assert len(set(hf)) == len(google)
    assert [names.hf_to_google(name, family) for name, _ in hf] == [(g, t) for g, (_, t) in zip(google, hf)]
    assert names.hf_to_google(f"{family}.embeddings.position_ids", family) is None
    # A tensor the family does not hold maps to no variable's name, so that loading names it as unexpected.
    assert names.hf_to_google("classifier.weight", family)[0] not in google
