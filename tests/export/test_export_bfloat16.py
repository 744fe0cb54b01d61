"""`export(..., precision="bfloat16")`: the encoder's products run in bfloat16, answers stay close to float32."""

from __future__ import annotations

import json
import pathlib
import sys
import warnings

import numpy as np
import pytest
import tensorflow as tf
from tensorflow.core.protobuf import saved_model_pb2

from kbert.export import export
from kbert.export.model_precision import with_precision
from kbert.precision import PrecisionWarning

sys.path.insert(0, str(pathlib.Path(__file__).parent))  # importlib mode: the helper beside us
import export_cases as cases  # noqa: E402

TASKS = ["classify", "tag", "qa", "encoder"]
PRODUCTS = {"MatMul", "BatchMatMulV2", "BatchMatMulV3", "Einsum", "_MklMatMul", "_MklEinsum"}


@pytest.fixture(scope="module")
def exports(tmp_path_factory):
    root = tmp_path_factory.mktemp("bf16")
    srcs = cases.sources()
    out = {}
    for task in TASKS:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", PrecisionWarning)  # this CPU may lack bfloat16: checked below
            out[task] = {p: export(srcs[task], root / task / p, precision=p) for p in ("float32", "bfloat16")}
    return out


def answers(path: pathlib.Path, task: str) -> dict[str, np.ndarray]:
    fn = tf.saved_model.load(str(path)).signatures["serving_default"]
    return {k: v.numpy() for k, v in fn(**{k: tf.constant(v) for k, v in cases.inputs_of(task).items()}).items()}


def product_dtypes(path: pathlib.Path) -> set[tuple[str, str]]:
    """(op, dtype) of every matmul / einsum node in the SavedModel's graph and its functions."""
    model = saved_model_pb2.SavedModel.FromString((path / "saved_model.pb").read_bytes())
    graph = model.meta_graphs[0].graph_def
    nodes = list(graph.node) + [n for f in graph.library.function for n in f.node_def]
    return {(n.op, tf.dtypes.as_dtype(n.attr["T"].type).name) for n in nodes if n.op in PRODUCTS and "T" in n.attr}


@pytest.mark.parametrize("task", TASKS)
def test_bfloat16_export_runs_products_in_bfloat16_and_records_it(task, exports):
    f32, bf16 = exports[task]["float32"], exports[task]["bfloat16"]
    assert {d for _, d in product_dtypes(bf16)} >= {"bfloat16"}
    assert {d for _, d in product_dtypes(f32)} == {"float32"}
    for path, precision in ((f32, "float32"), (bf16, "bfloat16")):
        assert json.loads((path / "assets" / "kbert_export.json").read_text())["precision"] == precision


@pytest.mark.parametrize("task", TASKS)
def test_bfloat16_answers_close_to_float32(task, exports):
    want, got = answers(exports[task]["float32"], task), answers(exports[task]["bfloat16"], task)
    assert want.keys() == got.keys()
    for key, value in got.items():
        if value.dtype.kind == "f":
            assert value.dtype == np.float32, key  # answers leave as float32
    if task == "classify":
        np.testing.assert_allclose(got["probabilities"], want["probabilities"], atol=2e-2)
        assert np.mean(got["label_id"] == want["label_id"]) >= 0.8
    elif task == "encoder":
        for key in ("pooled_output", "mean_embedding"):
            np.testing.assert_allclose(got[key], want[key], atol=5e-2)
    elif task == "tag":
        np.testing.assert_array_equal(got["num_words"], want["num_words"])
        assert np.mean(got["word_label_id"] == want["word_label_id"]) >= 0.8
    else:
        assert np.mean((got["start_char"] >= 0) == (want["start_char"] >= 0)) >= 0.6
        np.testing.assert_allclose(got["score"], want["score"], atol=0.5)


def test_with_precision_keeps_weights_and_policy():
    model = cases.sources()["classify"].model
    bf16 = with_precision(model, "bfloat16")
    assert bf16.encoder.embeddings.dtype_policy.name == "mixed_bfloat16"
    assert with_precision(bf16, "float32").encoder.embeddings.dtype_policy.name == "float32"
    assert bf16.get_layer("logits").dtype_policy.name == "float32"  # logits stay float32
    for a, b in zip(model.get_weights(), bf16.get_weights()):
        np.testing.assert_array_equal(a, b)
    assert with_precision(model, "float32") is model
    with pytest.raises(ValueError, match="precision must be one of"):
        with_precision(model, "float16")


def test_tflite_with_bfloat16_is_float32_and_says_so(tmp_path):
    src = cases.sources()["classify"]
    with pytest.warns(PrecisionWarning, match="TFLite has no bfloat16 kernels"):
        out = export(src, tmp_path / "1", tflite=True, precision="bfloat16")
    assert (out / "model.tflite").is_file()


@pytest.mark.slow  # a TFLite conversion: about 20 s
def test_tflite_of_a_model_trained_in_bfloat16_runs_in_float32():
    """`tflite_convert.convert` of a model under Keras' mixed bfloat16 policy (as `kbert finetune` leaves it on a
    CPU with bfloat16): the file runs in LiteRT (a bfloat16 graph converts, but LiteRT has no bfloat16 Slice) and
    answers as the float32 model."""
    import dataclasses

    from kbert.export import tflite, tflite_convert

    src = cases.sources()["classify"]
    trained_in_bf16 = dataclasses.replace(src, model=with_precision(src.model, "bfloat16"))
    texts = cases.inputs_of("classify")["text"]
    lite = tflite.run(tflite.interpreter(tflite_convert.convert(trained_in_bf16)), {"text": texts})
    want = cases.reference(src, {"text": texts})
    np.testing.assert_allclose(lite["probabilities"], want["probabilities"], atol=1e-5)
