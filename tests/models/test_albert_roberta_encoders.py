"""ALBERT's and RoBERTa's encoders as Keras models: the standard checks, every downstream model built on them,
and the parameter counts of their presets against transformers' `AlbertModel` and `RobertaModel`."""

import keras
import numpy as np
import pytest
from keras.src.backend.common import global_state

import kbert
from layer_checks import run_standard_checks

VOCAB, SEQ = 24, 8


def albert(**overrides):
    return kbert.AlbertEncoder(**{**dict(vocab_size=VOCAB, embedding_size=8, hidden_size=16, num_hidden_layers=4,
                                         num_hidden_groups=2, inner_group_num=2, num_attention_heads=2,
                                         intermediate_size=32, max_position_embeddings=16), **overrides})


def roberta(**overrides):
    return kbert.RobertaEncoder(**{**dict(vocab_size=VOCAB, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                                          intermediate_size=32, max_position_embeddings=18), **overrides})


ENCODERS = {"albert": albert, "roberta": roberta}


def inputs(family):
    rng = np.random.default_rng(0)
    token_ids = rng.integers(5, VOCAB, size=(2, SEQ)).astype("int32")
    token_ids[:, 0], token_ids[:, -1] = 2, 3
    padding_mask = np.ones((2, SEQ), "int32")
    padding_mask[1, SEQ - 2:] = 0
    token_ids[1, SEQ - 2:] = 0 if family == "albert" else 1  # the pad id: RoBERTa's positions count the rest
    segment_ids = np.zeros((2, SEQ), "int32")
    if family == "albert":
        segment_ids[:, 4:] = 1
    return {"token_ids": token_ids, "segment_ids": segment_ids, "padding_mask": padding_mask}


@pytest.mark.parametrize("family", ENCODERS)
def test_encoder_standard_checks(family):
    encoder = ENCODERS[family]()
    run_standard_checks(encoder, inputs(family))
    assert type(keras.saving.deserialize_keras_object(keras.saving.serialize_keras_object(encoder))) is type(encoder)


@pytest.mark.slow  # about 10 s: a fit step
@pytest.mark.parametrize("family", ENCODERS)
def test_task_models_on_any_family(family):
    """The fine-tuning heads read only the encoder's inputs, outputs and config: each builds on either family, and
    a classifier trains the encoder under it."""
    x = inputs(family)
    shapes = {}
    for model in (kbert.BertTokenClassifier(ENCODERS[family](), num_labels=4), kbert.BertQuestionAnswerer(
            ENCODERS[family]())):
        restored = type(model).from_config(model.get_config())
        assert type(restored.encoder) is type(model.encoder)
        shapes.update({name: tuple(value.shape) for name, value in keras.tree.flatten_with_path(model(x))})
    assert sorted(shapes.values()) == [(2, SEQ), (2, SEQ), (2, SEQ, 4)]
    classifier = kbert.BertClassifier(ENCODERS[family](), num_classes=3)
    classifier.compile()
    before = classifier.encoder.embeddings.token_embedding.embeddings.numpy()
    classifier.fit(x, np.array([0, 2]), epochs=1, verbose=0)
    assert not np.array_equal(before, classifier.encoder.embeddings.token_embedding.embeddings.numpy())


@pytest.mark.slow  # about 10 s: the standard checks of a pretrainer
def test_albert_pretrainer_ties_the_narrow_token_table():
    """ALBERT's masked-LM head (as Hugging Face's AlbertMLMHead): dense H -> E, LayerNorm(E), then the E-wide
    token table transposed, plus a bias; the sentence head reads the pooled output."""
    encoder = albert()
    pretrainer = kbert.BertPretrainer(encoder, objective="sop")
    pretrainer.compile()
    assert tuple(pretrainer.mlm_head._intermediate_dense.kernel.shape) == (16, 8)
    hidden, embedding = 16, 8
    head = hidden * embedding + embedding + 2 * embedding + VOCAB + (hidden * 2 + 2)
    assert pretrainer.count_params() == encoder.count_params() + head  # the decoder is the token table itself
    x = {**inputs("albert"), "masked_positions": np.array([[1, 3], [2, 0]], "int32")}
    labels = {"masked_ids": np.array([[7, 9], [11, 0]], "int32"),
              "masked_weights": np.array([[1.0, 1.0], [1.0, 0.0]], "float32"),
              "next_sentence_label": np.array([0, 1], "int32")}
    run_standard_checks(pretrainer, x, fit_inputs={**x, **labels})


def test_probe_follows_the_layer_schedule():
    encoder = albert()
    x = inputs("albert")
    probe = encoder.probe(x)
    assert len(probe["hidden_states"]) == 4 + 1 and len(probe["attention_probs"]) == 4 * 2
    assert probe["hidden_states"][0].shape == (2, SEQ, 16)  # after the E -> H projection
    real = np.asarray(x["padding_mask"]).astype(bool)  # inference runs real tokens only: zeros at padding
    np.testing.assert_allclose(probe["sequence_output"][real], encoder(x)["sequence_output"].numpy()[real], atol=1e-5)


def test_bfloat16_copy_of_any_family():
    from kbert.export.model_precision import with_precision

    for family, make in ENCODERS.items():
        encoder = make()
        copy = with_precision(encoder, "bfloat16")
        assert type(copy) is type(encoder) and copy.embeddings.compute_dtype == "bfloat16"
        out = copy(inputs(family))["pooled_output"].numpy().astype("float32")
        np.testing.assert_allclose(out, encoder(inputs(family))["pooled_output"].numpy(), atol=0.05)


def count_without_values(make):
    """The weight count of a model built without drawing its initial values (the largest has 355M weights)."""
    pending = list(global_state.get_global_attribute("uninitialized_variables", [], set_to_default=True))
    with keras.StatelessScope(initialize_variables=False):
        model = make()
    count = model.count_params()
    # Leave nothing waiting for a value: the next scope to close would draw them all.
    global_state.set_global_attribute("uninitialized_variables", pending)
    return count


@pytest.mark.parametrize("cls, preset, count", [
    ("AlbertEncoder", "base", 11_683_584), ("AlbertEncoder", "large", 17_683_968),
    ("AlbertEncoder", "xlarge", 58_724_864), ("AlbertEncoder", "xxlarge", 222_595_584),
    ("RobertaEncoder", "base", 124_645_632), ("RobertaEncoder", "large", 355_359_744)])
def test_preset_parameter_counts(cls, preset, count):
    assert count_without_values(lambda: getattr(kbert, cls).from_preset(preset)) == count


@pytest.mark.parametrize("family", ["albert", "roberta"])
def test_base_preset_counts_as_transformers(family):
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    cls = {"albert": kbert.AlbertEncoder, "roberta": kbert.RobertaEncoder}[family]
    config = cls.config_class.from_preset("base")
    hf_config = getattr(transformers, f"{family.capitalize()}Config")(**config.to_dict())
    with torch.device("meta"):  # shapes only
        model = getattr(transformers, f"{family.capitalize()}Model")(hf_config)
    assert count_without_values(lambda: cls.from_preset("base")) == sum(p.numel() for p in model.parameters())


def test_small_presets_and_their_errors():
    for preset, (layers, hidden) in {"tiny": (2, 128), "mini": (4, 256), "small": (4, 512)}.items():
        config = kbert.AlbertConfig.from_preset(preset)
        assert (config.num_hidden_layers, config.hidden_size, config.num_attention_heads) == \
            (layers, hidden, hidden // 64)
    assert kbert.RobertaConfig.from_preset("tiny").num_hidden_layers == 2  # BERT's small shapes, for pretraining
    with pytest.raises(ValueError, match="Unknown RoBERTa preset 'xlarge'"):
        kbert.RobertaEncoder.from_preset("xlarge")
    assert kbert.AlbertConfig.from_preset("xlarge").num_attention_heads == 16  # as released
