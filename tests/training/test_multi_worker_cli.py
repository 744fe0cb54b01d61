"""`kbert pretrain` and `kbert finetune` with `--strategy multi_worker`: 2 processes on 127.0.0.1, each
given TF_CONFIG as a cluster manager would; one killed mid-run, both restarted."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time

import pytest

from tests.conftest import TINY_VOCAB
from tests.training.conftest import keyword_rows, write_tsv
from tests.training._training_subprocess import ROOT, free_ports, worker_env

pytestmark = pytest.mark.slow

CORPUS_WORDS = ["the", "cat", "sat", "on", "mat", "dog", "ran", "a", "good", "bad"]


def _corpus(path):
    lines = []
    for d in range(30):
        for s in range(4):
            lines.append(" ".join(CORPUS_WORDS[(d * 7 + s * 3 + i) % len(CORPUS_WORDS)] for i in range(3 + s)) + " .")
        lines.append("")
    path.write_text("\n".join(lines), encoding="utf-8")
    return path


def _start_workers(argv, logs, scratch):
    """Both workers of a 2-worker cluster on free local ports, as `kbert ARGV`."""
    hosts = [f"127.0.0.1:{port}" for port in free_ports(2)]
    processes = []
    for index, log in enumerate(logs):
        env = dict(worker_env(), TMPDIR=str(scratch), TF_CONFIG=json.dumps(
            {"cluster": {"worker": hosts}, "task": {"type": "worker", "index": index}}))
        processes.append(subprocess.Popen([sys.executable, "-m", "kbert.cli.main", *map(str, argv)], cwd=ROOT,
                                          env=env, stdout=log.open("w"), stderr=subprocess.STDOUT))
    return processes


def _wait(processes, logs, timeout=240):
    try:
        for process, log in zip(processes, logs):
            code = process.wait(timeout=timeout)
            assert code == 0, f"{log.name} exited {code}:\n{log.read_text(errors='replace')[-3000:]}"
    finally:
        _kill(processes)


def _kill(processes):
    for process in processes:
        if process.poll() is None:
            process.kill()
            process.wait()


def _scratch_dirs(scratch):
    return {name for name in os.listdir(scratch) if name.startswith("kbert-")}


def _backup_epoch(metadata):
    try:
        return json.loads(metadata.read_text())["epoch"]
    except (OSError, ValueError, KeyError):
        return 0


def test_two_worker_pretrain_resumes_after_a_kill(tmp_path):
    import kbert
    from kbert.cli.main import main

    scratch = tmp_path / "tmp"  # the workers' temporary directories
    scratch.mkdir()
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("\n".join(TINY_VOCAB) + "\n", encoding="utf-8")
    data = tmp_path / "data"  # one shard, fewer than the workers
    assert main(["create-pretraining-data", "--input", str(_corpus(tmp_path / "corpus.txt")), "--vocab",
                 str(vocab), "--out", str(data), "--sequence-length", "16", "--dupe-factor", "2"]) == 0

    out, total = tmp_path / "out", 30
    argv = ["pretrain", "--train", data, "--out", out, "--strategy", "multi_worker", "--steps", total,
            "--batch-size", 4, "--save-every-steps", 5, "--verbose", 0, "--no-tensorboard"]
    first = [tmp_path / f"first{i}.log" for i in range(2)]
    processes = _start_workers(argv, first, scratch)
    metadata = out / "backup" / "training_metadata.json"
    try:
        deadline = time.monotonic() + 180
        while _backup_epoch(metadata) < 1:
            for process, log in zip(processes, first):
                assert process.poll() is None, f"{log.name} ended before a backup:\n{log.read_text()[-3000:]}"
            assert time.monotonic() < deadline, "no backup within 180 s"
            time.sleep(0.2)
        processes[1].send_signal(signal.SIGKILL)
        time.sleep(2)  # the chief finishes any backup it is writing, then waits for worker 1
        processes[0].terminate()
        try:
            processes[0].wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass
    finally:
        _kill(processes)
    saved = _backup_epoch(metadata) * 5
    assert 0 < saved < total

    left_by_the_kill = _scratch_dirs(scratch)  # SIGKILL leaves a process no time to clean up
    second = [tmp_path / f"second{i}.log" for i in range(2)]
    _wait(_start_workers(argv, second, scratch), second)
    for log in second:
        text = log.read_text(errors="replace")
        assert re.search(rf"Resuming .*out from step {saved}\b", text), text[-3000:]
        assert "has 1 file(s) for 2 workers" in text and "--num-shards 2" in text  # by record, warned
        assert "Traceback" not in text
    history = json.loads((out / "history.json").read_text())
    assert history["steps"] == total and history["replicas"] == 2
    assert kbert.load_pretrained(out).bert_config.num_hidden_layers == 2
    # One set of outputs: the chief's; worker 1 wrote only to scratch, now removed.
    assert sorted(p.name for p in tmp_path.iterdir() if p.is_dir()) == ["data", "out", "tmp"]
    assert sorted(os.listdir(out / "checkpoints")) and not (out / "backup").exists()
    assert _scratch_dirs(scratch) == left_by_the_kill


def test_two_worker_finetune_trains_on_two_replicas(tmp_path, tiny_vocab_file):
    import kbert

    scratch = tmp_path / "tmp"
    scratch.mkdir()
    train = write_tsv(tmp_path / "train.tsv", ["sentence", "label"], keyword_rows(32, 0))
    dev = write_tsv(tmp_path / "dev.tsv", ["sentence", "label"], keyword_rows(8, 1))
    model_dir = tmp_path / "model"
    logs = [tmp_path / f"finetune{i}.log" for i in range(2)]
    _wait(_start_workers(["finetune", "classify", "--vocab", tiny_vocab_file, "--train", train, "--validation", dev,
                          "--text-column", "sentence", "--sequence-length", 16, "--epochs", 1, "--batch-size", 8,
                          "--out", model_dir, "--strategy", "multi_worker", "--verbose", "0"], logs, scratch), logs)
    for log in logs:
        assert "2 replica(s)" in log.read_text()
    assert json.loads((model_dir / "metrics.json").read_text())["num_examples"] == 8
    assert kbert.load_model(model_dir).task.labels == ["0", "1"]
    assert sorted(p.name for p in tmp_path.iterdir() if p.is_dir()) == ["model", "tmp"]  # one model directory
    assert not _scratch_dirs(scratch)  # worker 1's, removed
