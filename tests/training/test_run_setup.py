"""`run_setup`: the strategy before the policy, both undone after the run; `build_encoder` checks the vocabulary."""

import json
import subprocess
import sys

import keras
import pytest
import tensorflow as tf

import kbert.training.run_setup as run_setup_module
from kbert.training import worker_outputs
from kbert.training.run_setup import build_encoder, encoder_config, run_setup
from tests.conftest import TINY_VOCAB
from tests.training._training_subprocess import ROOT, free_ports, worker_env


def test_the_strategy_comes_before_the_policy_and_both_end_with_the_run(monkeypatch, tmp_path):
    policies_seen_by_the_strategy = []
    get_strategy = run_setup_module.get_strategy

    def recording_get_strategy(*args, **kwargs):
        policies_seen_by_the_strategy.append(keras.config.dtype_policy().name)
        return get_strategy(*args, **kwargs)

    monkeypatch.setattr(run_setup_module, "get_strategy", recording_get_strategy)
    monkeypatch.setenv("TF_CONFIG", json.dumps({"cluster": {"worker": ["a:1", "b:2"]},
                                                "task": {"type": "worker", "index": 1}}))  # not the chief
    with pytest.raises(RuntimeError, match="interrupted"):
        with run_setup("one_device", mixed_precision="mixed_bfloat16") as distribution:
            assert distribution.num_replicas_in_sync == 1
            assert keras.layers.Dense(2).compute_dtype == "bfloat16"
            scratch = worker_outputs.write_dir(tmp_path / "out")
            tf.io.gfile.makedirs(scratch)
            raise RuntimeError("interrupted")
    assert policies_seen_by_the_strategy == ["float32"]  # the caller's: the policy was not set yet
    assert keras.config.dtype_policy().name == "float32"
    assert not tf.io.gfile.exists(scratch)  # this worker's scratch is gone
    assert not (tmp_path / "out").exists()  # and it never wrote where the chief does


def test_a_multi_worker_strategy_can_be_created_under_run_setup(tmp_path):
    # MultiWorkerMirroredStrategy fails ("Collective ops must be configured at program startup") once
    # TensorFlow's runtime has started: importing the drivers' set-up and setting "auto" must not start it.
    tf_config = {"cluster": {"worker": [f"127.0.0.1:{free_ports(1)[0]}"]}, "task": {"type": "worker", "index": 0}}
    code = ("import tensorflow as tf\n"
            "from kbert.training.run_setup import run_setup\n"
            "with run_setup('multi_worker', mixed_precision='auto') as s:\n"
            "    print(isinstance(s, tf.distribute.MultiWorkerMirroredStrategy), s.num_replicas_in_sync)\n")
    env = dict(worker_env(), TF_CONFIG=json.dumps(tf_config))
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split() == ["True", "1"]


def test_build_encoder_starts_from_a_checkpoint_or_an_architecture(tiny_init):
    vocabulary = len(TINY_VOCAB)
    assert build_encoder(vocabulary, init=str(tiny_init), hidden_dropout_prob=0.0,
                         attention_probs_dropout_prob=0.0).bert_config.hidden_dropout_prob == 0.0
    fresh = build_encoder(40, preset=str(tiny_init))  # the checkpoint's architecture, the run's vocabulary
    assert (fresh.bert_config.vocab_size, fresh.bert_config.hidden_size) == (40, 32)
    assert encoder_config(40, init=str(tiny_init)).vocab_size == vocabulary
    assert encoder_config(40, preset="mini").vocab_size == 40


def test_a_vocabulary_that_does_not_fit_the_checkpoint_is_an_error_naming_both_sizes(tiny_init):
    with pytest.raises(ValueError, match=f"vocab_size {len(TINY_VOCAB)} differs from the vocabulary's 99 tokens"):
        build_encoder(99, init=str(tiny_init))
    # A checkpoint's table padded past its vocabulary (no id reaches the extra rows) is fine.
    assert build_encoder(len(TINY_VOCAB) - 2, init=str(tiny_init)).bert_config.vocab_size == len(TINY_VOCAB)
