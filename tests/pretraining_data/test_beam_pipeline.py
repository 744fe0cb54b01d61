"""`create-pretraining-data --beam`: the one-process path's records as an Apache Beam pipeline (DirectRunner)."""

import collections
import json
import os
import pathlib
import random
import sys

import pytest

from kbert.pretraining_data.data_stats import record_stats
from kbert.cli.main import main
from kbert.pretraining_data.dynamic_masking import pretraining_feature_spec
from kbert.pretraining_data.tfrecords import load_pretraining_dataset

REPO = pathlib.Path(__file__).resolve().parents[2]
TOPICS = [
    (["cat", "dog", "cow"], ["eats", "sees", "likes"]),
    (["car", "bus", "van"], ["hits", "passes", "tows"]),
    (["king", "queen", "knight"], ["rules", "meets", "serves"]),
    (["ship", "boat", "raft"], ["sails", "sinks", "floats"]),
]


@pytest.fixture
def beam():
    return pytest.importorskip("apache_beam")


@pytest.fixture
def corpus(tmp_path):
    """Two files of 200 documents of 2-7 sentences ("the cat eats the dog ."), and their vocabulary."""
    rng = random.Random(0)
    for name in ("a.txt", "b.txt"):
        lines = []
        for _ in range(200):
            nouns, verbs = rng.choice(TOPICS)
            for _ in range(rng.randint(2, 7)):
                subject = rng.randrange(3)
                lines.append(f"the {nouns[subject]} {verbs[subject]} the {rng.choice(nouns)} .")
            lines.append("")
        (tmp_path / "corpus").mkdir(exist_ok=True)
        (tmp_path / "corpus" / name).write_text("\n".join(lines), encoding="utf-8")
    words = sorted({w for nouns, verbs in TOPICS for w in nouns + verbs} | {"the", "."})
    (tmp_path / "vocab.txt").write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *words]) + "\n")
    return tmp_path


def create(corpus, output, *extra):
    return main(["create-pretraining-data", "--input", str(corpus / "corpus" / "*.txt"), "--vocab",
                 str(corpus / "vocab.txt"), "--out", str(output), "--sequence-length", "32", "--dupe-factor", "5",
                 "--num-shards", "3", "--document-buffer", "100", "--seed", "7", *map(str, extra)])


def shard_bytes(directory):
    return {p.name: p.read_bytes() for p in sorted(pathlib.Path(directory).glob("part-*.tfrecord"))}


def test_without_apache_beam_the_error_names_the_extra(corpus, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "apache_beam", None)  # `import apache_beam` now raises ImportError
    assert create(corpus, corpus / "out", "--beam") == 2
    error = capsys.readouterr().err
    assert "kbert create-pretraining-data: error:" in error and "pip install 'kbert[beam]'" in error
    assert not (corpus / "out").exists()
    from kbert.pretraining_data.beam_pipeline import import_beam

    with pytest.raises(ImportError, match=r"kbert\[beam\]"):
        import_beam()


def test_unknown_flags_are_an_error_without_beam(corpus, capsys):
    assert create(corpus, corpus / "out", "--runner=DirectRunner") == 2
    assert "unrecognized arguments: --runner=DirectRunner" in capsys.readouterr().err
    assert not (corpus / "out").exists()


def test_same_records_as_the_one_process_path(beam, corpus):
    assert create(corpus, corpus / "one") == 0
    assert create(corpus, corpus / "beam", "--beam", "--runner=DirectRunner") == 0
    one, par = record_stats(corpus / "one"), record_stats(corpus / "beam")
    assert one["instances"] > 1500
    assert abs(par["instances"] / one["instances"] - 1) < 0.05, (one, par)
    assert par["features"] == one["features"] and len(one["features"]) == 7
    assert 0.45 <= one["nsp_positive"] <= 0.55 and 0.45 <= par["nsp_positive"] <= 0.55, (one, par)
    assert abs(par["mean_real_tokens"] / one["mean_real_tokens"] - 1) < 0.05, (one, par)
    # The same layout and metadata (record counts and sizes aside), so `kbert pretrain` reads either.
    assert sorted(p.name for p in (corpus / "beam").iterdir()) == sorted(p.name for p in (corpus / "one").iterdir())
    meta_one, meta_beam = (json.loads((corpus / d / "pretraining_data.json").read_text()) for d in ("one", "beam"))
    assert meta_beam.keys() == meta_one.keys()
    assert {k: v for k, v in meta_beam.items() if k not in ("num_instances", "shards")} == {
        k: v for k, v in meta_one.items() if k not in ("num_instances", "shards")}
    assert meta_beam["num_instances"] == sum(s["records"] for s in meta_beam["shards"]) == par["instances"]
    assert [s["bytes"] for s in meta_beam["shards"]] == [
        (corpus / "beam" / s["file"]).stat().st_size for s in meta_beam["shards"]]
    dataset = load_pretraining_dataset(corpus / "beam", 4, shuffle=False)
    assert dataset.element_spec == pretraining_feature_spec(32, 5, (4,))
    batch = next(iter(dataset))
    assert batch["masked_weights"].numpy().sum() > 0 and (batch["token_ids"].numpy()[:, 0] == 2).all()


def token_counts(directory):
    """How often each word id occurs in the unmasked records of a directory (specials left out)."""
    import tensorflow as tf

    counts = collections.Counter()
    for path in sorted(pathlib.Path(directory).glob("part-*.tfrecord")):
        for raw in tf.data.TFRecordDataset(str(path)).as_numpy_iterator():
            counts.update(t for t in tf.train.Example.FromString(raw).features.feature["token_ids"].int64_list.value
                          if t > 4)
    return counts


@pytest.mark.parametrize("model_type", ["roberta", "albert"])
def test_model_types_give_the_same_records_as_the_one_process_path(beam, corpus, model_type):
    flags = ["--model-type", model_type, "--masking", "dynamic"]
    assert create(corpus, corpus / "one", *flags) == 0
    assert create(corpus, corpus / "beam", *flags, "--beam") == 0
    one, par = record_stats(corpus / "one"), record_stats(corpus / "beam")
    assert par["features"] == one["features"]
    assert abs(par["instances"] / one["instances"] - 1) < 0.05, (one, par)
    assert abs(par["mean_real_tokens"] / one["mean_real_tokens"] - 1) < 0.05, (one, par)
    meta_one, meta_beam = (json.loads((corpus / d / "pretraining_data.json").read_text()) for d in ("one", "beam"))
    assert {k: v for k, v in meta_beam.items() if k not in ("num_instances", "shards")} == {
        k: v for k, v in meta_one.items() if k not in ("num_instances", "shards")}
    if model_type == "roberta":  # full sentences: every token of the corpus, 5 times (--dupe-factor), in both
        assert one["nsp_positive"] == par["nsp_positive"] == 1.0 and one["mean_real_tokens"] > 28
        words = sum(len(line.split()) for f in (corpus / "corpus").glob("*.txt") for line in f.read_text().split("\n"))
        assert token_counts(corpus / "one") == token_counts(corpus / "beam")
        assert sum(token_counts(corpus / "one").values()) == 5 * words
    else:
        assert (meta_one["objective"], meta_one["ngram"], meta_one["whole_word_masking"]) == ("sop", 3, True)
        assert 0.45 <= one["nsp_positive"] <= 0.55 and 0.45 <= par["nsp_positive"] <= 0.55, (one, par)


def test_output_is_deterministic_for_a_seed(beam, corpus):
    assert create(corpus, corpus / "a", "--beam") == 0
    assert create(corpus, corpus / "b", "--beam", "--direct_num_workers=1") == 0
    first = shard_bytes(corpus / "a")
    assert len(first) == 3 and all(first.values())
    assert shard_bytes(corpus / "b") == first
    assert create(corpus, corpus / "c", "--beam", "--seed", "8") == 0
    assert shard_bytes(corpus / "c") != first


def test_dynamic_masking_sop_and_chinese_whole_words(beam, tmp_path):
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *"我爱北京天安门。你好"]) + "\n")
    corpus = tmp_path / "zh.txt"
    corpus.write_text("我爱北京天安门。你好。\n我爱北京。\n天安门。我爱你。\n" * 20, encoding="utf-8")
    common = ["create-pretraining-data", "--input", str(corpus), "--vocab", str(vocab), "--sequence-length", "24",
              "--layout", "documents", "--language", "zh", "--whole-word-masking", "--dupe-factor", "3",
              "--objective", "sop", "--masking", "dynamic", "--beam"]
    assert main([*common, "--out", str(tmp_path / "dyn")]) == 0
    metadata = json.loads((tmp_path / "dyn" / "pretraining_data.json").read_text())
    assert metadata["masking"] == "dynamic" and metadata["objective"] == "sop" and metadata["language"] == "zh"
    dataset = load_pretraining_dataset(tmp_path / "dyn", 2, seed=0)
    assert dataset.element_spec == pretraining_feature_spec(24, 4, (2,))
    assert next(iter(dataset))["masked_weights"].numpy().sum() > 0
    # The unmasked records keep jieba's word starts: 北京 and 天安门 are words (a False after their first token).
    tokens = vocab.read_text().split()
    import tensorflow as tf

    starts = {}
    for path in sorted((tmp_path / "dyn").glob("part-*.tfrecord")):
        for raw in tf.data.TFRecordDataset(str(path)).as_numpy_iterator():
            feature = tf.train.Example.FromString(raw).features.feature
            for token, start in zip(feature["token_ids"].int64_list.value, feature["word_starts"].int64_list.value):
                starts.setdefault(tokens[token], set()).add(start)
    assert starts["京"] == {0} and starts["安"] == {0} and starts["北"] == {1} and 0 in starts["门"]


@pytest.mark.slow
def test_two_worker_processes_through_the_cli_then_pretrain(beam, corpus, monkeypatch):
    # The DirectRunner's worker processes import kbert: they get this checkout on their path.
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
    assert create(corpus, corpus / "one-worker", "--beam") == 0
    assert create(corpus, corpus / "two", "--beam", "--runner=DirectRunner", "--direct_num_workers=2",
                  "--direct_running_mode=multi_processing") == 0
    assert shard_bytes(corpus / "two") == shard_bytes(corpus / "one-worker")  # no dependence on the workers
    model = {"hidden_size": 16, "num_hidden_layers": 1, "num_attention_heads": 2, "intermediate_size": 32,
             "max_position_embeddings": 32}
    (corpus / "model.json").write_text(json.dumps(model))
    assert main(["pretrain", "--train", str(corpus / "two"), "--config", str(corpus / "model.json"),
                 "--objective", "nsp", "--steps", "2", "--batch-size", "8", "--out", str(corpus / "run"),
                 "--verbose", "0"]) == 0
    assert json.loads((corpus / "run" / "history.json").read_text())["steps"] == 2


def test_apache_beam_is_an_extra_imported_only_by_beam_runs():
    import ast
    import subprocess

    tree = ast.parse((REPO / "setup.py").read_text(encoding="utf-8"))
    values = {node.targets[0].id: ast.literal_eval(node.value) for node in tree.body
              if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name)
              and isinstance(node.value, ast.List)}
    assert not any("apache-beam" in r for r in values["INSTALL_REQUIRES"])  # `pip install -e .` stays free of it
    assert any(r.startswith("apache-beam") for r in values["BEAM_REQUIRES"])
    code = ("import sys, kbert.cli.create_pretraining_data, kbert.pretraining_data.beam_pipeline; "
            "assert 'apache_beam' not in sys.modules, 'imported eagerly'")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    result = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]


def test_output_url_empty_corpus_and_tfds_input(beam, corpus):
    import tensorflow as tf

    from kbert.pretraining_data.beam_pipeline import create_pretraining_data_beam
    from kbert.pretraining_data.create import CreatePretrainingDataConfig

    # Every output goes through tf.io.gfile: ram:// stands in for gs:// (in-process runner, one memory).
    assert create(corpus, "ram://beam-test/out", "--beam", "--num-shards", "2") == 0
    assert sorted(tf.io.gfile.listdir("ram://beam-test/out")) == [
        "part-00000-of-00002.tfrecord", "part-00001-of-00002.tfrecord", "pretraining_data.json", "vocab.txt"]
    metadata = json.loads(tf.io.gfile.GFile("ram://beam-test/out/pretraining_data.json").read())
    assert metadata["num_instances"] == sum(
        1 for s in metadata["shards"] for _ in tf.data.TFRecordDataset(f"ram://beam-test/out/{s['file']}")) > 1500
    (corpus / "empty.txt").write_text("\n\n", encoding="utf-8")
    config = CreatePretrainingDataConfig(input=[str(corpus / "empty.txt")], vocab=str(corpus / "vocab.txt"),
                                         out=str(corpus / "empty"))
    with pytest.raises(ValueError, match="gives no pretraining instance"):
        create_pretraining_data_beam(config)
    assert not (corpus / "empty" / "pretraining_data.json").exists()
    config.input = ["tfds:wikipedia"]
    with pytest.raises(ValueError, match="--beam reads text files"):
        create_pretraining_data_beam(config)
