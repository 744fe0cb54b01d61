"""Models by Hugging Face Hub name (`kbert.file_io.model_source`), against a stand-in Hub on 127.0.0.1: a tiny
random BERT written by transformers' `save_pretrained`, loaded by name, from the cache, offline, downloaded, and
fine-tuned from; and the error for a name that cannot be found."""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

import kbert
from kbert.cli.main import main
from kbert.file_io import model_source
from tests.conftest import TINY_VOCAB
from tests.family_checkpoints import SIZES
from tests.hub_server import serving_repositories
from tests.training.conftest import keyword_rows, write_tsv

transformers = pytest.importorskip("transformers")
torch = pytest.importorskip("torch")
pytest.importorskip("huggingface_hub")

ROOT = pathlib.Path(__file__).resolve().parents[1]
REPO = "org/tiny-bert"


@pytest.fixture(scope="module")
def tiny_bert(tmp_path_factory) -> pathlib.Path:
    """A random 2-layer `BertModel` and its WordPiece tokenizer, as transformers saves them."""
    directory = tmp_path_factory.mktemp("tiny-bert")
    vocab = directory / "vocab.txt"
    vocab.write_text("\n".join(TINY_VOCAB) + "\n", encoding="utf-8")
    transformers.BertTokenizer(str(vocab), do_lower_case=True).save_pretrained(str(directory))
    torch.manual_seed(0)
    transformers.BertModel(transformers.BertConfig(vocab_size=len(TINY_VOCAB), **SIZES)).save_pretrained(
        str(directory))
    (directory / "README.md").write_text("a file kbert does not read\n")
    return directory


@pytest.fixture
def hub(tiny_bert, tmp_path, monkeypatch):
    """The stand-in Hub serving `tiny_bert` as org/tiny-bert, with an empty Hugging Face cache under tmp_path
    (`tests.hub_server.serving_repositories`); `test_environment_is_honoured` runs a fresh process with the
    environment variables alone."""
    with serving_repositories({REPO: tiny_bert}, tmp_path, monkeypatch) as stand_in:
        yield stand_in


def test_names_and_paths():
    assert model_source.parse_hub_name("hf://org/tiny-bert") == ("org/tiny-bert", None)
    assert model_source.parse_hub_name("hf://bert-base-uncased@v1") == ("bert-base-uncased", "v1")
    assert model_source.parse_hub_name("org/tiny-bert@0123abc") == ("org/tiny-bert", "0123abc")
    for path in ("gs://bucket/model", "ram://model", "/abs/dir", "./rel/dir", "a/b/c", "vocab.txt", str(ROOT)):
        assert model_source.parse_hub_name(path) is None, path
        assert model_source.resolve_model(path) == path
    with pytest.raises(ValueError, match="not a Hugging Face Hub name"):
        model_source.parse_hub_name("hf://a/b/c")


def test_load_by_name_matches_transformers(hub, tiny_bert):
    encoder = kbert.load_pretrained(f"hf://{REPO}")
    tokenizer = kbert.load_tokenizer(f"hf://{REPO}")
    ids = tokenizer(["the cat sat on the mat", "a good dog ran"]).to_list()
    width = max(map(len, ids))
    token_ids = np.array([row + [0] * (width - len(row)) for row in ids])
    mask = (np.arange(width) < np.array([[len(row)] for row in ids])).astype("int32")
    ours = encoder({"token_ids": token_ids, "segment_ids": np.zeros_like(token_ids), "padding_mask": mask})
    reference = transformers.BertModel.from_pretrained(str(tiny_bert)).eval()
    with torch.no_grad():
        theirs = reference(input_ids=torch.tensor(token_ids), attention_mask=torch.tensor(mask))
    np.testing.assert_allclose(np.asarray(ours["sequence_output"]) * mask[..., None],
                               theirs.last_hidden_state.numpy() * mask[..., None], atol=1e-4)
    np.testing.assert_allclose(np.asarray(ours["pooled_output"]), theirs.pooler_output.numpy(), atol=1e-4)
    fetched = sorted(path.split("/resolve/")[1].split("/", 1)[1] for method, path in hub.requests
                     if method == "GET" and "/resolve/" in path)
    assert fetched == sorted(["config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json",
                              "vocab.txt"] + (["special_tokens_map.json"]
                                              if (tiny_bert / "special_tokens_map.json").exists() else []))


def test_second_load_asks_nothing_and_offline_reads_the_cache(hub):
    first = model_source.resolve_source(f"hf://{REPO}")
    assert first.commit == hub.repositories[REPO].commit and first.path.endswith(first.commit)
    asked = len(hub.requests)
    assert asked > 0
    kbert.load_pretrained(f"hf://{REPO}")  # config, weights and heads: the name is resolved once a process
    kbert.load_pretrained(REPO)
    assert len(hub.requests) == asked
    from huggingface_hub import constants

    model_source.forget_resolved()
    with pytest.MonkeyPatch.context() as offline:
        offline.setattr(constants, "HF_HUB_OFFLINE", True)
        assert model_source.resolve_source(f"hf://{REPO}") == first
    assert len(hub.requests) == asked


def test_unreachable_name_says_what_was_tried(hub):
    with pytest.raises(model_source.ModelNotFoundError) as error:
        kbert.load_pretrained("hf://org/no-such-model")
    message = str(error.value)
    for part in ("'org/no-such-model' not found", "local file or directory", "Hugging Face cache",
                 str(os.environ["HF_HUB_CACHE"]), hub.endpoint, "offline mode off", "RepositoryNotFoundError",
                 "kbert download org/no-such-model --out DIR"):
        assert part in message, part


def test_cli_error_offline_has_no_traceback(hub, capsys):
    from huggingface_hub import constants

    with pytest.MonkeyPatch.context() as offline:
        offline.setattr(constants, "HF_HUB_OFFLINE", True)
        assert main(["convert", "org/not-cached", "--out", "unused"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("kbert convert: error: model 'org/not-cached' not found") and "Traceback" not in err
    assert "offline mode on (HF_HUB_OFFLINE=1" in err and "kbert download org/not-cached --out DIR" in err
    assert not [path for _, path in hub.requests if "not-cached" in path]


def test_download_writes_a_directory_that_loads(hub, tmp_path, capsys):
    out = tmp_path / "carried"
    assert main(["download", f"hf://{REPO}", "--out", str(out)]) == 0
    assert str(out) in capsys.readouterr().out
    assert not (out / "README.md").exists() and (out / "model.safetensors").is_file()
    assert not (out / "model.safetensors").is_symlink()
    recorded = json.loads((out / model_source.SOURCE_FILE).read_text())
    assert recorded == {"name": f"hf://{REPO}", "repo_id": REPO, "revision": "main",
                        "commit": hub.repositories[REPO].commit}
    by_name, carried = kbert.load_pretrained(f"hf://{REPO}"), kbert.load_pretrained(out)
    for a, b in zip(by_name.weights, carried.weights, strict=True):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    assert model_source.resolve_source(out).commit == recorded["commit"]


def test_environment_is_honoured(hub, tmp_path):
    """A fresh process, given only HF_ENDPOINT and HF_HUB_CACHE, downloads from the stand-in; with HF_HUB_OFFLINE=1
    it answers from the cache alone."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    command = [sys.executable, "-m", "kbert.cli.main", "download", REPO]
    online = subprocess.run(command + ["--out", str(tmp_path / "a")], env=env, capture_output=True, text=True,
                            timeout=120)
    assert online.returncode == 0, online.stderr[-2000:]
    asked = len(hub.requests)
    assert asked > 0
    offline = subprocess.run(command + ["--out", str(tmp_path / "b")], env={**env, "HF_HUB_OFFLINE": "1"},
                             capture_output=True, text=True, timeout=120)
    assert offline.returncode == 0, offline.stderr[-2000:]
    assert len(hub.requests) == asked
    assert (tmp_path / "a" / "config.json").read_bytes() == (tmp_path / "b" / "config.json").read_bytes()


def test_token_reaches_a_private_repository(hub, tiny_bert, tmp_path):
    """HF_TOKEN, in a fresh process: without it a private repository is not found; with it the token goes in the
    requests' Authorization header and the model downloads."""
    hub.add("org/private-bert", tiny_bert, token="hf_stand_in_token")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    env.pop("HF_TOKEN", None)
    command = [sys.executable, "-m", "kbert.cli.main", "download", "org/private-bert", "--out", str(tmp_path / "p")]
    refused = subprocess.run(command, env=env, capture_output=True, text=True, timeout=120)
    assert refused.returncode == 1 and "'org/private-bert' not found" in refused.stderr, refused.stderr[-2000:]
    asked = len(hub.authorizations)
    allowed = subprocess.run(command, env={**env, "HF_TOKEN": "hf_stand_in_token"}, capture_output=True,
                             text=True, timeout=120)
    assert allowed.returncode == 0, allowed.stderr[-2000:]
    assert "Bearer hf_stand_in_token" in hub.authorizations[asked:]
    assert (tmp_path / "p" / "model.safetensors").read_bytes() == (tiny_bert / "model.safetensors").read_bytes()


def test_finetune_from_a_hub_name_records_the_commit(hub, tmp_path):
    train = write_tsv(tmp_path / "train.tsv", ["sentence", "label"], keyword_rows(16, 0))
    out = tmp_path / "model"
    assert main(["finetune", "classify", "--init", f"hf://{REPO}", "--train", str(train), "--text-column",
                 "sentence", "--sequence-length", "16", "--epochs", "1", "--batch-size", "16", "--out", str(out),
                 "--verbose", "0"]) == 0
    init = json.loads((out / "init.json").read_text())
    assert init["name"] == f"hf://{REPO}" and init["commit"] == hub.repositories[REPO].commit
    assert kbert.load_model(out).tokenizer.get_vocabulary() == TINY_VOCAB
