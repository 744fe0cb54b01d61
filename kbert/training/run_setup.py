"""What `finetune` and `pretrain` both do before they train: the strategy and precision, and the encoder.

- `run_setup(...)`: creates the tf.distribute strategy, then sets the run's Keras dtype policy, for a
  `with` block that is the run; after it the caller's policy is back and this worker's scratch
  (`kbert.training.worker_outputs`, where a worker other than the chief writes) is removed.
- `encoder_config(...)`, `build_encoder(...)`: the encoder a run starts from, a checkpoint's or fresh
  weights in a preset's or a checkpoint's architecture and family (`model_type`: BERT, ALBERT or RoBERTa),
  checked against the run's vocabulary.

The order is the strategy, then the policy: `MultiWorkerMirroredStrategy` configures TensorFlow's
collective ops, which TensorFlow allows only before its runtime starts ("RuntimeError: Collective ops
must be configured at program startup" once anything has listed logical devices). Setting a policy does
not start the runtime (`"auto"` lists physical devices only), so either order runs today; the strategy
first keeps it that way whatever the policy step comes to do, as `get_strategy` asks.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
from collections.abc import Iterator
from typing import Any

import tensorflow as tf

import kbert.file_io as file_io
from kbert.config import CONFIG_CLASSES, BertConfig, check_model_type
from kbert.convert.checkpoints import load_pretrained, read_config
from kbert.models.bert_encoder import BertEncoder
from kbert.models.families import encoder_from_config
from kbert.training.mixed_precision import mixed_precision_scope
from kbert.training.strategy import get_strategy
from kbert.training.worker_outputs import remove_scratch


@contextlib.contextmanager
def run_setup(strategy: str = "auto", tpu: str | None = None,
              mixed_precision: str = "none") -> Iterator[tf.distribute.Strategy]:
    """A training run's strategy and dtype policy, for the `with` block only.

    Creates the strategy first (see the module docstring), then sets the policy with
    `mixed_precision_scope`. On leaving the block, by return or error, the previous policy comes back
    and the temporary directories this worker wrote to (`worker_outputs.write_dir`) are removed.

    Args:
        strategy: str. A `kbert.training.strategy.get_strategy` name.
        tpu: str or None. With `strategy="tpu"`: the TPU, as in `get_strategy`.
        mixed_precision: str. One of `kbert.precision.MIXED_PRECISIONS`.

    Yields:
        The `tf.distribute.Strategy`; build and compile the model inside its `scope()`.

    Example:
    >>> import keras
    >>> from kbert.precision import MIXED_BFLOAT16
    >>> with run_setup("one_device", mixed_precision=MIXED_BFLOAT16) as distribution:
    ...     with distribution.scope():
    ...         keras.layers.Dense(2).compute_dtype
    'bfloat16'
    >>> keras.config.dtype_policy().name
    'float32'
    """
    distribution = get_strategy(strategy, tpu=tpu)
    with mixed_precision_scope(mixed_precision):
        try:
            yield distribution
        finally:
            remove_scratch()


def encoder_config(vocabulary_size: int, init: str | os.PathLike | None = None, preset: str = "tiny",
                   model_type: str = "bert") -> BertConfig:
    """The architecture a run starts from, before the run's own overrides.

    Args:
        vocabulary_size: int. Tokens in the run's vocabulary, the vocab_size of a fresh encoder.
        init: str, PathLike or None. A checkpoint directory: its config, vocab_size included.
        preset: str. Without `init`: a preset name of the family (`kbert.config.PRESETS`,
            `ALBERT_PRESETS`, `ROBERTA_PRESETS`), or a checkpoint directory whose architecture (and family) is
            taken with `vocabulary_size`.
        model_type: str. The family of a preset: "bert", "albert" or "roberta" (`kbert.config.CONFIG_CLASSES`).

    Returns:
        A `BertConfig`.

    Example:
    >>> config = encoder_config(20, preset="tiny")
    >>> config.vocab_size, config.num_hidden_layers
    (20, 2)
    """
    if init is not None:
        return read_config(init)
    if file_io.isdir(preset) or "/" in preset:  # a checkpoint (a preset name has no "/")
        return dataclasses.replace(read_config(preset), vocab_size=vocabulary_size)
    return CONFIG_CLASSES[check_model_type(model_type)].from_preset(preset, vocab_size=vocabulary_size)


def build_encoder(vocabulary_size: int, init: str | os.PathLike | None = None, preset: str = "tiny",
                  model_type: str = "bert", pad_token_id: int | None = None, **fields: Any) -> BertEncoder:
    """The encoder a run trains: `init`'s weights, else fresh weights in `encoder_config`'s architecture.

    Build it inside the strategy's scope.

    Args:
        vocabulary_size: int. Tokens in the run's vocabulary (`tokenizer.vocabulary_size()`).
        init: str, PathLike or None. A checkpoint directory that `kbert.load_pretrained` reads.
        preset: str. Without `init`: a preset name or a checkpoint directory, as in `encoder_config`.
        model_type: str. The family of a fresh encoder (`encoder_config`); with `init`, "bert" (the default)
            takes the checkpoint's family, another must match it.
        pad_token_id: int or None. The vocabulary's padding id, for a fresh encoder whose config records one
            (RoBERTa counts positions after it).
        **fields: `BertConfig` fields that replace the checkpoint's or preset's (e.g. dropout rates).

    Returns:
        A `BertEncoder`, or the `AlbertEncoder`, `RobertaEncoder` or `DistilBertEncoder` of such a checkpoint.

    Raises:
        ValueError: a model type that does not match `init`'s, a fresh encoder's vocab_size is
            not the vocabulary's size, or a checkpoint's embedding table is too small for the vocabulary's ids
            (a larger one, padded past the vocabulary as some releases are, is fine: no id reaches its extra
            rows). The message names both sizes.

    Example:
    >>> build_encoder(20, preset="tiny", num_hidden_layers=1).bert_config.num_hidden_layers
    1
    >>> build_encoder(20, preset="tiny", vocab_size=30)
    Traceback (most recent call last):
    ...
    ValueError: The model's vocab_size 30 differs from the vocabulary's 20 tokens
    """
    if init is not None:
        encoder = load_pretrained(init, **fields)  # any family: the checkpoint's own
        if model_type != "bert" and encoder.bert_config.model_type != model_type:
            raise ValueError(f"--model-type {model_type} does not match {init}, a "
                             f"{encoder.bert_config.model_type} checkpoint")
    else:
        config = encoder_config(vocabulary_size, preset=preset, model_type=model_type)
        if pad_token_id is not None and "pad_token_id" in {field.name for field in dataclasses.fields(config)}:
            fields = {"pad_token_id": pad_token_id, **fields}
        encoder = encoder_from_config(dataclasses.replace(config, **fields))
    size = encoder.bert_config.vocab_size
    if size < vocabulary_size if init is not None else size != vocabulary_size:
        raise ValueError(f"The model's vocab_size {size} differs from the vocabulary's {vocabulary_size} tokens")
    return encoder
