"""sentence-transformers models as shipped, in the layouts of e5 (prompts, mean pooling, Normalize), bge (an
instruction prompt, [CLS] pooling), gte (mean pooling) and with Dense projections: kbert's vectors equal
`SentenceTransformer.encode(texts, prompt_name=...)` to 1e-5 through the Python API, the exported SavedModel
(one signature per prompt), `kbert embed --prompt-name`, TFLite, and a fine-tuned model directory."""

import json

import numpy as np
import pytest
import tensorflow as tf

import kbert
from kbert.cli.main import main
from kbert.tasks.embedding import load_sentence_encoder
from tests.sentence_models import LAYOUTS, sentence_model_dir

st = pytest.importorskip("sentence_transformers")

TEXTS = ["the cat sat on the mat .", "a dog ran !", "", "searching relevant passages",
         " ".join(["the good cat sat on a mat"] * 6)]  # past max_seq_length 16, the prompt included


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    root = tmp_path_factory.mktemp("sentence_models")
    return {layout: sentence_model_dir(root / layout, layout) for layout in LAYOUTS}


def prompt_names(layout: str) -> list:
    return [None, *LAYOUTS[layout][3]]


def reference(directory, prompt_name=None) -> np.ndarray:
    return st.SentenceTransformer(str(directory), device="cpu").encode(TEXTS, prompt_name=prompt_name)


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_encode_equals_sentence_transformers_with_every_prompt(models, layout):
    model = load_sentence_encoder(models[layout])
    pooling, dense, normalize, prompts, default, _ = LAYOUTS[layout]
    assert (model.task.pooling, model.task.normalize, model.task.default_prompt_name) == (pooling, normalize, default)
    assert [layer.units for layer in model.dense_layers] == [units for units, _, _ in dense]
    for name in prompt_names(layout):
        want = reference(models[layout], name)
        np.testing.assert_allclose(model.encode(TEXTS, prompt_name=name), want, atol=1e-5, err_msg=str(name))
    # Prompts change the vectors (an empty prompt does not); the default prompt applies when none is named.
    for name, text in prompts.items():
        bare = model.encode(TEXTS, prompt_name=name) - st.SentenceTransformer(
            str(models[layout]), device="cpu").encode(TEXTS, prompt="")
        assert (np.abs(bare).max() > 1e-4) == bool(text), name
    if default:
        np.testing.assert_allclose(model.encode(TEXTS), model.encode(TEXTS, prompt_name=default), atol=1e-6)
    with pytest.raises(ValueError, match="no prompt 'nope'"):
        model.encode(TEXTS, prompt_name="nope")


@pytest.mark.slow
@pytest.mark.parametrize("layout", ["e5", "dense", "default_prompt"])
def test_export_serves_one_signature_per_prompt_and_kbert_embed_picks_one(models, layout, tmp_path):
    out = tmp_path / "export"
    assert main(["export", str(models[layout]), "--out", str(out)]) == 0
    loaded = tf.saved_model.load(str(out))
    prompts = LAYOUTS[layout][3]
    assert {f"prompt_{name}" for name in prompts} <= set(loaded.signatures)
    for name in prompt_names(layout):
        signature = "serving_default" if name is None else f"prompt_{name}"
        got = loaded.signatures[signature](text=tf.constant(TEXTS))["embedding"].numpy()
        np.testing.assert_allclose(got, reference(models[layout], name), atol=1e-5, err_msg=signature)
    # kbert embed --prompt-name: the prompt's signature, over a corpus file.
    name = sorted(prompts)[-1]
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps({"id": str(i), "text": t}) + "\n" for i, t in enumerate(TEXTS) if t))
    assert main(["embed", str(out), "--input", str(corpus), "--out", str(tmp_path / "vectors"),
                 "--prompt-name", name]) == 0
    ids, vectors = kbert.load_embeddings(str(tmp_path / "vectors"))
    want = reference(models[layout], name)
    np.testing.assert_allclose(vectors, want[[int(i) for i in ids]], atol=1e-5)


@pytest.mark.slow
def test_tflite_keeps_the_dense_layers_and_refuses_a_default_prompt(models, tmp_path):
    from kbert.export.tflite import interpreter, run

    out = tmp_path / "dense"
    assert main(["export", str(models["dense"]), "--out", str(out), "--tflite"]) == 0
    lite = interpreter(str(out / "model.tflite"))
    assert not any(key.startswith("prompt_") for key in lite.get_signature_list())  # TFLite joins no strings
    got = run(lite, {"text": TEXTS})["embedding"]
    np.testing.assert_allclose(got, reference(models["dense"]), atol=1e-5)
    assert main(["export", str(models["default_prompt"]), "--out", str(tmp_path / "default"), "--tflite"]) != 0


@pytest.mark.slow
def test_fine_tuned_dense_model_keeps_its_layers_and_prompts(models, tmp_path):
    model = load_sentence_encoder(models["dense"])
    before = [w.copy() for w in model.dense_layers[0].get_weights()]
    model.compile()
    x = model.preprocessor(["the cat sat", "a dog ran", "a good mat", "the bad dog"])
    model.fit(x, np.zeros((4,), np.float32), batch_size=4, epochs=1, verbose=0)
    assert np.abs(model.dense_layers[0].get_weights()[0] - before[0]).max() > 0  # the Dense layers train
    kbert.save_model(model, tmp_path, model.tokenizer, model.task, sequence_length=16)
    again = kbert.load_model(tmp_path, compile=False)
    assert again.task == model.task and again.dense == model.dense
    for name in prompt_names("dense"):
        ours = model.encode(TEXTS, prompt_name=name)
        np.testing.assert_allclose(again.encode(TEXTS, prompt_name=name), ours, atol=1e-6)
        # The model directory is a sentence-transformers one: Dense modules, Normalize and prompts included.
        np.testing.assert_allclose(reference(tmp_path, name), ours, atol=1e-5)
