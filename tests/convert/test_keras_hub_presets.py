"""keras-hub presets by name (`kaggle://...`, keras-hub's own names, a `save_to_preset` directory) through every
kbert entry point, without a network: presets written here by keras-hub, and a kagglehub cache filled with them.

The reference for each is keras-hub itself: the backbone converted by `kbert.from_keras_hub` (whose parity with
keras-hub's backbones `test_keras_hub_families.py` shows) and the ids of keras-hub's own tokenizer.
"""

from __future__ import annotations

import json
import os
import pathlib
import shutil

import keras_hub
import numpy as np
import pytest

import kbert
from kbert.cli.main import main
from kbert.convert import keras_hub_presets
from kbert.file_io import model_source
from tests.convert.test_keras_hub_families import batch, perturbed
from tests.family_checkpoints import albert_sentencepiece_dir, bpe_files
from tests.training.conftest import FILLER, keyword_rows

BERT = dict(num_layers=2, num_heads=2, hidden_dim=16, intermediate_dim=32, max_sequence_length=16)
VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *FILLER, "good", "bad"]
VOCAB += [f"w{i}" for i in range(50 - len(VOCAB))]  # 50 ids, those of `batch()`
TEXTS = ["the good cat sat", "a bad dog ran on the mat .", "good", "dog , cat"]
BUILTIN = "bert_tiny_en_uncased"


@pytest.fixture(autouse=True)
def caches(tmp_path, monkeypatch):
    """kbert's and kagglehub's caches in the test's directory, Kaggle's API at a closed local port."""
    monkeypatch.setenv("KBERT_CACHE", str(tmp_path / "kbert-cache"))
    monkeypatch.setenv("KAGGLEHUB_CACHE", str(tmp_path / "kagglehub"))
    monkeypatch.setenv("KAGGLE_API_ENVIRONMENT", "TEST")  # http://localhost:7777: refused at once
    model_source.forget_resolved()
    yield
    model_source.forget_resolved()


@pytest.fixture(scope="module")
def bert_preset(tmp_path_factory):
    """A random BertBackbone (every weight perturbed) and its tokenizer, as keras-hub writes a preset."""
    directory = tmp_path_factory.mktemp("presets") / "bert"
    backbone = perturbed(keras_hub.models.BertBackbone(vocabulary_size=len(VOCAB), **BERT))
    backbone.save_to_preset(str(directory))
    keras_hub.models.BertTokenizer(vocabulary=VOCAB, lowercase=True).save_to_preset(str(directory))
    return directory, backbone


def fill_kaggle_cache(preset: pathlib.Path, handle: str) -> None:
    """Puts a preset's files in kagglehub's cache as kagglehub leaves a finished download of `handle`."""
    owner, model, framework, variation, version = handle.removeprefix("kaggle://").split("/")
    base = pathlib.Path(os.environ["KAGGLEHUB_CACHE"], "models", owner, model, framework, variation)
    shutil.copytree(preset, base / version)
    for file in preset.rglob("*"):
        if file.is_file():
            marker = base / ".complete" / version / f"{file.relative_to(preset)}.complete"
            marker.parent.mkdir(parents=True, exist_ok=True)
            marker.touch()


def assert_same_encoder(encoder, reference):
    config = encoder.bert_config
    inputs = batch(segments=config.type_vocab_size > 1)  # ids below 50, folded into a smaller vocabulary
    inputs["token_ids"] %= config.vocab_size
    np.testing.assert_allclose(encoder(inputs)["sequence_output"], reference(inputs)["sequence_output"], atol=1e-6)


def test_names_that_are_presets():
    assert keras_hub_presets.preset_of("kaggle://keras/bert/keras/bert_tiny_en_uncased/2").startswith("kaggle://")
    assert keras_hub_presets.preset_of(BUILTIN) == BUILTIN
    assert keras_hub_presets.builtin_handle(BUILTIN).startswith("kaggle://keras/bert/keras/bert_tiny_en_uncased/")
    # Hub ids, other file systems and names keras-hub does not know are not presets.
    for name in ("google-bert/bert-base-uncased", "bert-base-uncased", "hf://org/name", "ram://x/y",
                 "no_such_preset_name"):
        assert keras_hub_presets.preset_of(name) is None, name


def test_preset_directory_loads_and_tokenizes_as_keras_hub(bert_preset):
    directory, backbone = bert_preset
    encoder = kbert.load_pretrained(directory)
    assert type(encoder) is kbert.BertEncoder
    assert_same_encoder(encoder, kbert.from_keras_hub(backbone))
    reference = keras_hub.models.BertTokenizer.from_preset(str(directory))
    ids = kbert.load_tokenizer(directory)(TEXTS).to_list()
    assert ids == [np.asarray(reference(text)).tolist() for text in TEXTS]
    source = model_source.resolve_source(directory)
    assert source.path.startswith(str(keras_hub_presets.cache_root())) and source.repo_id == str(directory)


def test_kaggle_handle_from_a_filled_cache_then_without_keras_hub(bert_preset, monkeypatch):
    directory, backbone = bert_preset
    handle = "kaggle://keras/bert/keras/bert_tiny_en_uncased/2"
    fill_kaggle_cache(directory, handle)
    assert_same_encoder(kbert.load_pretrained(handle), kbert.from_keras_hub(backbone))
    # A second process's use reads kbert's cache: keras-hub (and Kaggle behind it) is not asked again.
    model_source.forget_resolved()

    def refuse(*args, **kwargs):
        raise AssertionError("keras-hub was asked again")

    monkeypatch.setattr(keras_hub.models.Backbone, "from_preset", refuse)
    assert_same_encoder(kbert.load_pretrained(handle), kbert.from_keras_hub(backbone))
    assert kbert.load_tokenizer(handle)(TEXTS).to_list() == kbert.BertTokenizer(VOCAB)(TEXTS).to_list()


def test_builtin_name_resolves_to_its_handle_and_downloads_as_a_directory(bert_preset, tmp_path, capsys):
    directory, backbone = bert_preset
    handle = keras_hub_presets.builtin_handle(BUILTIN)
    fill_kaggle_cache(directory, handle)
    out = tmp_path / "carried"
    assert main(["download", BUILTIN, "--out", str(out)]) == 0
    recorded = json.loads((out / model_source.SOURCE_FILE).read_text())
    assert recorded == {"name": BUILTIN, "repo_id": handle}
    assert (out / "vocab.txt").read_text().split() == VOCAB
    assert_same_encoder(kbert.load_pretrained(out), kbert.from_keras_hub(backbone))


@pytest.mark.slow  # fine-tuning from a preset name: about 15 s
def test_finetune_from_a_preset_name(bert_preset, tmp_path):
    directory, _ = bert_preset
    fill_kaggle_cache(directory, "kaggle://keras/bert/keras/bert_tiny_en_uncased/2")
    train = tmp_path / "train.tsv"
    train.write_text("text\tlabel\n" + "".join(f"{t}\t{y}\n" for t, y in keyword_rows(32, 0)), encoding="utf-8")
    out = tmp_path / "model"
    assert main(["finetune", "classify", "--init", "kaggle://keras/bert/keras/bert_tiny_en_uncased/2",
                 "--train", str(train), "--validation", str(train), "--sequence-length", "16", "--epochs", "1",
                 "--batch-size", "16", "--out", str(out), "--verbose", "0"]) == 0
    init = json.loads((out / "init.json").read_text())
    assert init["repo_id"] == "kaggle://keras/bert/keras/bert_tiny_en_uncased/2"


def test_albert_and_roberta_presets(tmp_path):
    rows = [text for text, _ in keyword_rows(64, 0)]
    spiece = albert_sentencepiece_dir(tmp_path / "spm", rows) / "spiece.model"
    albert = perturbed(keras_hub.models.AlbertBackbone(vocabulary_size=kbert.load_tokenizer(spiece).vocabulary_size(),
                                                       num_layers=2, num_heads=2, embedding_dim=8, hidden_dim=16,
                                                       intermediate_dim=32, max_sequence_length=16))
    albert.save_to_preset(str(tmp_path / "albert"))
    keras_hub.models.AlbertTokenizer(proto=spiece.read_bytes()).save_to_preset(str(tmp_path / "albert"))
    encoder = kbert.load_pretrained(tmp_path / "albert")
    assert type(encoder) is kbert.AlbertEncoder
    assert_same_encoder(encoder, kbert.from_keras_hub(albert))
    lower = [text.lower() for text in TEXTS]  # keras-hub's ALBERT tokenizer does not lower-case; kbert's does
    reference = keras_hub.models.AlbertTokenizer.from_preset(str(tmp_path / "albert"))
    assert kbert.load_tokenizer(tmp_path / "albert")(lower).to_list() == [np.asarray(reference(t)).tolist()
                                                                            for t in lower]

    size = bpe_files(tmp_path, rows)
    vocabulary = json.loads((tmp_path / "vocab.json").read_text(encoding="utf-8"))
    merges = [line for line in (tmp_path / "merges.txt").read_text(encoding="utf-8").splitlines()[1:] if line]
    roberta = perturbed(keras_hub.models.RobertaBackbone(vocabulary_size=size, num_layers=2, num_heads=2,
                                                         hidden_dim=16, intermediate_dim=32, max_sequence_length=16))
    roberta.save_to_preset(str(tmp_path / "roberta"))
    keras_hub.models.RobertaTokenizer(vocabulary=vocabulary, merges=merges).save_to_preset(str(tmp_path / "roberta"))
    with pytest.warns(UserWarning, match="no pooler"):
        encoder = kbert.load_pretrained(tmp_path / "roberta")
    assert type(encoder) is kbert.RobertaEncoder
    with pytest.warns(UserWarning, match="no pooler"):
        assert_same_encoder(encoder, kbert.from_keras_hub(roberta))
    reference = keras_hub.models.RobertaTokenizer.from_preset(str(tmp_path / "roberta"))
    assert kbert.load_tokenizer(tmp_path / "roberta")(TEXTS).to_list() == [np.asarray(reference(t)).tolist()
                                                                            for t in TEXTS]


def test_missing_preset_says_what_was_tried(capsys):
    with pytest.raises(model_source.ModelNotFoundError) as error:
        kbert.load_pretrained("kaggle://keras/bert/keras/bert_tiny_en_uncased/2")
    message = str(error.value)
    for part in ("keras-hub preset 'kaggle://keras/bert/keras/bert_tiny_en_uncased/2'", "KAGGLEHUB_CACHE",
                 "kbert download kaggle://keras/bert/keras/bert_tiny_en_uncased/2 --out DIR"):
        assert part in message, part
    assert main(["convert", "kaggle://keras/bert/keras/bert_tiny_en_uncased/2", "--out", "unused"]) == 1
    err = capsys.readouterr().err
    assert "keras-hub preset" in err and "Traceback" not in err
    assert not os.path.exists(keras_hub_presets.cache_directory(
        "kaggle://keras/bert/keras/bert_tiny_en_uncased/2"))
