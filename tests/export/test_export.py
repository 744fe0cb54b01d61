"""Export tests: strings in, answers out, checked in a fresh TF process and in LiteRT."""

from __future__ import annotations

import json
import os
import pathlib
import shutil
import subprocess
import sys

import numpy as np
import pytest
import tensorflow as tf

from kbert.export import export, read_warmup
from kbert.export.savedmodel import warmup_inputs
from kbert.export import tflite as tflite_lib

sys.path.insert(0, str(pathlib.Path(__file__).parent))  # importlib mode: the helper beside us
import export_cases as cases  # noqa: E402

TASKS = ["classify", "regress", "tag", "qa", "encoder", "embed"]

FRESH = r"""
import json, sys, numpy as np
import tensorflow as tf
import tensorflow_text
assert not [m for m in sys.modules if m.startswith("kbert")], "imported more than tf + tf_text"
jobs = json.loads(sys.argv[1])
out = {}
for task, (path, inputs) in jobs.items():
    fn = tf.saved_model.load(path).signatures["serving_default"]
    res = fn(**{k: tf.constant(v, tf.string) for k, v in inputs.items()})
    out[task] = {k: (v.numpy().astype(str) if v.dtype == tf.string else v.numpy()).tolist() for k, v in res.items()}
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    return cases.export_all(tmp_path_factory.mktemp("exports"))


@pytest.fixture(scope="module")
def fresh_outputs(exported):
    _, paths = exported
    jobs = {t: [str(p), cases.inputs_of(t)] for t, p in paths.items()}
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
    proc = subprocess.run([sys.executable, "-c", FRESH, json.dumps(jobs)], capture_output=True, text=True,
                          env=env, cwd="/")
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def check_against_reference(task, source, got, fast=False, atol=1e-5):
    inputs = cases.inputs_of(task)
    ref = cases.reference(source, inputs, fast=fast)
    if task == "tag":
        n = np.asarray(got["num_words"])
        words = [list(np.asarray(got["word_label_id"])[b, :n[b]]) for b in range(len(n))]
        assert words == ref["word_label_id"]
        assert all(len(w) > 0 for w, t in zip(words, inputs["text"]) if t)
        return
    if task == "qa":
        spans = ref["spans"]
        assert (np.asarray(got["start_char"]) >= 0).tolist() == [s[0] >= 0 for s in spans]
        return
    for key, want in ref.items():
        np.testing.assert_allclose(np.asarray(got[key], dtype=np.float32), want, atol=atol)


@pytest.mark.parametrize("task", TASKS)
def test_savedmodel_in_fresh_process_equals_model_of_preprocessor(task, exported, fresh_outputs):
    sources, _ = exported
    got = fresh_outputs[task]
    check_against_reference(task, sources[task], got)
    if task == "classify":
        probs = np.asarray(got["probabilities"])
        assert np.asarray(got["label_id"]).tolist() == probs.argmax(-1).tolist()
        assert got["label"] == [["neg", "neu", "pos"][i] for i in probs.argmax(-1)]
        assert len({tuple(np.round(p, 4)) for p in probs}) > 1  # inputs really change the answer


def test_tagger_words_and_entities(exported, fresh_outputs):
    got = fresh_outputs["tag"]
    text = cases.TEXTS[0]  # "The cats sat on the mat!"
    n = got["num_words"][0]
    assert got["word_text"][0][:n] == ["The", "cats", "sat", "on", "the", "mat", "!"]
    assert [text[s:e] for s, e in zip(got["word_start"][0][:n], got["word_end"][0][:n])] == got["word_text"][0][:n]
    labels = got["word_label"][0][:n]
    # Entities by conlleval rules from the word labels, computed here by hand.
    entities, current = [], None
    for k, label in enumerate(labels):
        kind = label[2:] if label != "O" else None
        if kind and (label.startswith("B-") or current is None or current[0] != kind):
            current = [kind, k, k]
            entities.append(current)
        elif kind:
            current[2] = k
        else:
            current = None
    m = got["num_entities"][0]
    assert got["entity_type"][0][:m] == [e[0] for e in entities]
    assert got["entity_text"][0][:m] == [text[got["word_start"][0][a]:got["word_end"][0][b]] for _, a, b in entities]
    assert got["word_start"][2] == [-1] * len(got["word_start"][2])  # empty text: no words


def test_qa_span_decoding(exported, fresh_outputs):
    sources, _ = exported
    got = fresh_outputs["qa"]
    ref = cases.reference(sources["qa"], cases.inputs_of("qa"))
    tok = sources["qa"].tokenizer
    for b, (ctx, (i, j)) in enumerate(zip(cases.CONTEXTS, ref["spans"])):
        if i < 0:
            assert got["start_char"][b] == -1 and got["answer"][b] == ""
            continue
        # token positions -> character offsets of the context, independently of the export.
        q_len = len(tok.tokenize(cases.QUESTIONS[b]).numpy())
        _, starts, ends = (t.numpy() for t in tok.tokenize_with_offsets(ctx))
        budget = cases.SEQ - 3
        q_keep = min(q_len, budget)
        ctx_first = 1 + q_keep + 1
        assert got["start_char"][b] == starts[i - ctx_first]
        assert got["end_char"][b] == ends[j - ctx_first]
        assert got["answer"][b] == ctx[starts[i - ctx_first]:ends[j - ctx_first]]
        assert 0 < got["score"][b] <= 1


@pytest.mark.parametrize("task", TASKS)
def test_tflite_equals_model_within_1e4(task, exported):
    sources, paths = exported
    interp = tflite_lib.interpreter(paths[task] / "model.tflite")
    got = tflite_lib.run(interp, cases.inputs_of(task))
    # The TFLite graph tokenizes with TFLiteBertTokenizer: the SavedModel's ids.
    pre = tflite_lib.run(interp, {k: v for k, v in cases.inputs_of(task).items()}, "preprocess")
    saved = tf.saved_model.load(str(paths[task])).signatures["preprocess"](
        **{k: tf.constant(v) for k, v in cases.inputs_of(task).items()})
    np.testing.assert_array_equal(pre["token_ids"], saved["token_ids"].numpy())
    check_against_reference(task, sources[task], got, fast=True, atol=1e-4)
    if task == "qa":
        sm = tf.saved_model.load(str(paths[task])).signatures["serving_default"](
            **{k: tf.constant(v) for k, v in cases.inputs_of(task).items()})
        # Both give character offsets.
        np.testing.assert_array_equal(got["start_char"], sm["start_char"].numpy())
        np.testing.assert_allclose(got["score"], sm["score"].numpy(), atol=1e-4)


def test_restored_weights_equal_source(exported):
    sources, paths = exported
    for task in ("classify", "qa"):
        loaded = tf.saved_model.load(str(paths[task]))
        want = [w.numpy() for w in sources[task].model.weights]
        got = [w.numpy() for w in loaded.weights]
        assert len(got) == len(want)
        for a, b in zip(got, want):
            np.testing.assert_array_equal(a, b)


def test_vocab_assets_inside_and_export_moves(exported, tmp_path):
    sources, paths = exported
    src = paths["classify"]
    vocab = (src / "assets" / "vocab.txt").read_text(encoding="utf-8").splitlines()
    assert vocab == sources["classify"].tokenizer.get_vocabulary()
    assert (src / "assets" / "labels.txt").read_text().splitlines() == ["neg", "neu", "pos"]
    config = json.loads((src / "assets" / "kbert_export.json").read_text())
    assert config["task"] == "classify" and config["sequence_length"] == cases.SEQ
    moved = tmp_path / "elsewhere" / "7"
    shutil.copytree(src, moved)
    before = tf.saved_model.load(str(src)).signatures["serving_default"](text=tf.constant(cases.TEXTS))
    after = tf.saved_model.load(str(moved)).signatures["serving_default"](text=tf.constant(cases.TEXTS))
    np.testing.assert_array_equal(before["probabilities"].numpy(), after["probabilities"].numpy())
    assert str(src.parent).encode() not in (src / "saved_model.pb").read_bytes()


def test_dropout_off_and_no_lambda_layers(tmp_path):
    import keras

    source = cases.sources(dropout=0.5)["classify"]
    assert not [l for l in source.model._flatten_layers() if isinstance(l, keras.layers.Lambda)]
    out = export(source, tmp_path / "m" / "1")
    fn = tf.saved_model.load(str(out)).signatures["serving_default"]
    first = fn(text=tf.constant(cases.TEXTS))["probabilities"].numpy()
    second = fn(text=tf.constant(cases.TEXTS))["probabilities"].numpy()
    np.testing.assert_array_equal(first, second)
    np.testing.assert_allclose(first, cases.reference(source, {"text": cases.TEXTS})["probabilities"], atol=1e-5)
    graph_ops = {n.op for f in tf.saved_model.load(str(out)).signatures.values()
                 for n in f.graph.as_graph_def().node}
    graph_ops |= {n.op for f in fn.graph.as_graph_def().library.function for n in f.node_def}
    assert not graph_ops & {"PyFunc", "EagerPyFunc", "PyFuncStateless"}


def test_atomic_version_write(tmp_path):
    source = cases.sources()["regress"]
    root = tmp_path / "models" / "sts"
    version = root / "1"

    def crash(tmp):
        assert (pathlib.Path(tmp) / "saved_model.pb").is_file()  # mid-write: the graph is there, the rename is not
        raise RuntimeError("simulated crash")

    with pytest.raises(RuntimeError, match="simulated crash"):
        export(source, version, _before_rename=crash)
    assert not version.exists() and list(root.iterdir()) == []
    # A killed process leaves its hidden, non-numeric temp directory, never a version directory.
    script = (f"import sys; sys.path[:0] = {[str(pathlib.Path(__file__).parent), str(pathlib.Path(__file__).parents[1]), str(pathlib.Path(__file__).parents[2])]!r}\n"
              "import os, export_cases as c\nfrom kbert.export import export\n"
              f"export(c.sources()['regress'], {str(version)!r}, _before_rename=lambda t: os._exit(3))\n")
    proc = subprocess.run([sys.executable, "-c", script], cwd=pathlib.Path(__file__).parent,
                          env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"), capture_output=True, text=True)
    assert proc.returncode == 3, proc.stderr[-2000:]
    assert not version.exists()
    assert all(p.name.startswith(".1.tmp-") and not p.name.isdigit() for p in root.iterdir())
    export(source, version)
    assert (version / "saved_model.pb").is_file()
    with pytest.raises(FileExistsError, match="force"):
        export(source, version)  # --force replacement: tests/export/test_export_cli.py


def test_saved_model_cli_lists_string_signatures(exported):
    _, paths = exported
    cli = shutil.which("saved_model_cli")
    command = [cli] if cli else [sys.executable, "-m", "tensorflow.python.tools.saved_model_cli"]
    proc = subprocess.run(command + ["show", "--dir", str(paths["tag"]), "--all"], capture_output=True,
                          text=True, env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2"))
    assert proc.returncode == 0, proc.stderr[-2000:]
    for name in ("serving_default", "tokenize", "preprocess"):
        block = proc.stdout.split(f"signature_def['{name}']:")[1].split("signature_def[")[0]
        inputs = block.split("The given SavedModel SignatureDef contains the following output(s):")[0]
        assert "inputs['text'] tensor_info:" in inputs and "dtype: DT_STRING" in inputs


@pytest.mark.parametrize("task", TASKS)
def test_warmup_records_parse_and_run(task, exported):
    _, paths = exported
    loaded = tf.saved_model.load(str(paths[task]))
    requests = read_warmup(paths[task])
    assert sorted(name for name, _ in requests) == sorted(loaded.signatures)
    for name, inputs in requests:
        out = loaded.signatures[name](**{k: tf.constant(v) for k, v in inputs.items()})
        batch = len(next(iter(inputs.values())))
        assert all(v.shape[0] == batch for v in out.values())
    if task == "classify":
        probs = dict(requests)["serving_default"]
        out = loaded.signatures["serving_default"](text=tf.constant(probs["text"]))
        np.testing.assert_allclose(out["probabilities"].numpy().sum(-1), 1.0, atol=1e-5)


@pytest.mark.parametrize("task", TASKS)
def test_config_records_each_signatures_declared_inputs_outputs_and_trim(task, exported):
    sources, paths = exported
    declared = sources[task].task.serving_inputs(sources[task].task.takes_pair)
    config = json.loads((paths[task] / "assets" / "kbert_export.json").read_text())
    loaded = tf.saved_model.load(str(paths[task]))
    assert sorted(config["signatures"]) == sorted(loaded.signatures)
    for name, spec in config["signatures"].items():
        fn = loaded.signatures[name]
        assert spec["inputs"] == list(declared.get(name, ("text",)))  # tokenize(text) is the module's own
        assert sorted(spec["inputs"]) == sorted(fn.structured_input_signature[1])
        assert spec["outputs"] == sorted(fn.structured_outputs)
    trims = {name: spec["trim"] for name, spec in config["signatures"].items() if spec["trim"]}
    if task == "tag":
        assert trims == {"serving_default": {
            "num_words": ["word_start", "word_end", "word_label_id", "word_label", "word_text"],
            "num_entities": ["entity_type", "entity_start", "entity_end", "entity_text"]}}
    else:
        assert trims == {}
    if task == "qa":
        assert config["signatures"]["serving_default"]["inputs"] == ["question", "context"]
    if task == "classify":
        assert config["signatures"]["serving_pair"]["inputs"] == ["text", "text_pair"]


def test_warmup_requests_are_the_tasks_examples(exported, tmp_path):
    from kbert.tasks import ClassificationTask, QuestionAnsweringTask

    _, paths = exported
    qa = dict(read_warmup(paths["qa"]))["serving_default"]
    examples = QuestionAnsweringTask.example_requests
    assert {k: v.astype(str).tolist() for k, v in qa.items()} == {
        "question": list(examples["question"]), "context": list(examples["context"])}

    class Greeting(ClassificationTask):  # a task with examples of its own
        example_requests = {"text": ("hello there", "good day", "hi"), "text_pair": ("and you?",)}

    source = cases.sources()["classify"]
    source.task = Greeting(labels=source.labels)
    requests = dict(read_warmup(export(source, tmp_path / "greeting" / "1")))
    assert requests["serving_default"]["text"].astype(str).tolist() == ["hello there", "good day", "hi"]
    assert {k: v.astype(str).tolist() for k, v in requests["serving_pair"].items()} == {
        "text": ["hello there", "good day", "hi"], "text_pair": ["and you?"] * 3}

    class Silent(ClassificationTask):
        example_requests = {"text": ("only one text",)}

    with pytest.raises(ValueError, match=r"Silent.example_requests has no example for input\(s\) \['text_pair'\]"):
        warmup_inputs(Silent(labels=source.labels), ("text", "text_pair"))


def test_a_signature_that_differs_from_its_declaration_is_refused():
    from kbert.export import build_module
    from kbert.tasks import ClassificationTask

    class Misdeclared(ClassificationTask):
        def serving_inputs(self, pair=False):
            return {**super().serving_inputs(pair), "serving_default": ("sentence",)}

    source = cases.sources()["classify"]
    source.task = Misdeclared(labels=source.labels)
    with pytest.raises(ValueError, match=r"'serving_default' takes \('text',\), but the task's serving_inputs "
                                         r"declares \('sentence',\)"):
        build_module(source)
