"""What `finetune` and `pretrain` both do before they train: the strategy and precision, and the encoder.

- `run_setup(...)`: creates the tf.distribute strategy, then sets the run's Keras dtype policy, for a
  `with` block that is the run; after it the caller's policy is back and this worker's scratch
  (`kbert.training.worker_outputs`, where a worker other than the chief writes) is removed.
- `encoder_config(...)`, `build_encoder(...)`: the encoder a run starts from, a checkpoint's or fresh
  weights in a preset's or a checkpoint's architecture, checked against the run's vocabulary;
  `encoder_class(model_type)` is where a model type picks its encoder family.

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
from kbert.config import BertConfig
from kbert.convert.checkpoints import load_pretrained, read_config
from kbert.models.bert_encoder import BertEncoder
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


def encoder_config(vocabulary_size: int, init: str | os.PathLike | None = None, preset: str = "tiny") -> BertConfig:
    """The architecture a run starts from, before the run's own overrides.

    Args:
        vocabulary_size: int. Tokens in the run's vocabulary, the vocab_size of a fresh encoder.
        init: str, PathLike or None. A checkpoint directory: its config, vocab_size included.
        preset: str. Without `init`: a preset name (`kbert.config.PRESETS`), or a checkpoint directory
            whose architecture is taken with `vocabulary_size`.

    Returns:
        A `BertConfig`.

    Example:
    >>> config = encoder_config(20, preset="tiny")
    >>> config.vocab_size, config.num_hidden_layers
    (20, 2)
    """
    if init is not None:
        return read_config(init)
    if file_io.isdir(preset):
        return dataclasses.replace(read_config(preset), vocab_size=vocabulary_size)
    return BertConfig.from_preset(preset, vocab_size=vocabulary_size)


def encoder_class(model_type: str = "bert") -> type:
    """The encoder class of a model type (`--model-type`): the one place where the family is chosen.

    Args:
        model_type: str. "bert", "albert" or "roberta".

    Returns:
        The encoder class.

    Raises:
        ValueError: the family's encoder is not in kbert yet, or an unknown model type.

    Example:
    >>> encoder_class("bert").__name__
    'BertEncoder'
    >>> encoder_class("albert")
    Traceback (most recent call last):
    ...
    ValueError: model_type 'albert': kbert's ALBERT encoder is not built yet (model_type 'bert' trains today)
    """
    if model_type == "bert":
        return BertEncoder
    families = {"albert": "ALBERT", "roberta": "RoBERTa"}  # kbert.AlbertEncoder, kbert.RobertaEncoder: to come
    if model_type in families:
        raise ValueError(f"model_type {model_type!r}: kbert's {families[model_type]} encoder is not built yet "
                         "(model_type 'bert' trains today)")
    raise ValueError(f"model_type must be 'bert', 'albert' or 'roberta', got {model_type!r}")


def build_encoder(vocabulary_size: int, init: str | os.PathLike | None = None, preset: str = "tiny",
                  model_type: str = "bert", **fields: Any) -> BertEncoder:
    """The encoder a run trains: `init`'s weights, else fresh weights in `encoder_config`'s architecture.

    Build it inside the strategy's scope.

    Args:
        vocabulary_size: int. Tokens in the run's vocabulary (`tokenizer.vocabulary_size()`).
        init: str, PathLike or None. A checkpoint directory that `kbert.load_pretrained` reads.
        preset: str. Without `init`: a preset name or a checkpoint directory, as in `encoder_config`.
        model_type: str. The encoder family (`encoder_class`).
        **fields: `BertConfig` fields that replace the checkpoint's or preset's (e.g. dropout rates).

    Returns:
        A `BertEncoder`.

    Raises:
        ValueError: a model type without its encoder yet (`encoder_class`), a fresh encoder's vocab_size is
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
    encoder_type = encoder_class(model_type)
    if init is not None:
        encoder = load_pretrained(init, **fields)
    else:
        encoder = encoder_type(**dataclasses.replace(encoder_config(vocabulary_size, preset=preset),
                                                     **fields).to_dict())
    size = encoder.bert_config.vocab_size
    if size < vocabulary_size if init is not None else size != vocabulary_size:
        raise ValueError(f"The model's vocab_size {size} differs from the vocabulary's {vocabulary_size} tokens")
    return encoder
