"""`PretrainConfig`: the settings of `kbert.training.pretrain.pretrain`, in a module without TensorFlow.

Its fields are `kbert pretrain`'s flags, so `kbert pretrain --help` reads them without loading TensorFlow.
"""

from __future__ import annotations

import dataclasses
import json
import os
import warnings
from typing import Any

import kbert.file_io as file_io
from kbert.config import BertConfig
from kbert.constants import OBJECTIVES

# Keys of earlier config files -> their names now (read for one release, with a warning).
RENAMED_KEYS = {"train_data": "train", "max_seq_length": "sequence_length"}


@dataclasses.dataclass
class PretrainConfig:
    """Every setting of a pretraining run; each is also a `kbert pretrain` flag (`--batch-size` ...).

    Model: `preset` (default "tiny") or `model` (BertConfig fields, e.g. from a bert_config.json),
    or `init`, a checkpoint to continue from (e.g. phase 1 of a two-phase run). `batch_size` is the
    global batch, split across the replicas of the strategy (it must divide by their number).
    Held-out evaluation at every checkpoint: `heldout_text` (text files, masked with the run's settings
    and a fixed seed) or `heldout_data` (a create-pretraining-data directory), at most
    `heldout_max_instances` instances. `encoding_errors` applies to raw-text `train` and
    `heldout_text` ("strict", "replace" or "ignore"). `max_minutes` stops training after that much wall
    time even if `steps` are not done (the learning-rate schedule still follows `steps`). `dropout`
    sets both dropout rates for this run only: the saved model keeps the rates of its preset, `model`
    or `init`, the ones fine-tuning uses (a short run of a small model underfits, and learns faster
    and steps faster without dropout).
    `jit_compile` compiles the whole train step (and the held-out evaluation step) as one XLA program at
    fixed shapes, as a TPU runs it (always on with `strategy="tpu"`): the training batches are whole
    (`drop_remainder`) and repeat, the held-out set drops its short last batch, and an op XLA cannot
    compile raises. `steps_per_execution` runs that many batches per call of Keras' compiled loop;
    `save_every_steps` and `steps` (times `gradient_accumulation_steps`) must divide by it. `tpu`
    (with `strategy="tpu"`): `local` on a Cloud TPU VM, a TPU name or a grpc:// address (None: TPU_NAME).

    `train` is a create-pretraining-data directory or raw text (a glob or "tfds:NAME"); `sequence_length`,
    `max_predictions_per_seq`, `masked_lm_prob`, `whole_word_masking`, `language` and `layout` are the
    raw-text settings, named as in `CreatePretrainingDataConfig` (a data directory brings its own).
    `from_file` still reads the keys of earlier config files (`train_data`, `max_seq_length`), with a
    warning.

    Example:
        >>> config = PretrainConfig(train="corpus/*.txt", vocab="vocab.txt", out="run", steps=1000)
        >>> config.sequence_length
        128
    """

    train: str = ""
    out: str = ""
    preset: str = "tiny"
    model: dict[str, Any] = dataclasses.field(default_factory=dict, metadata={"cli": False})
    init: str | None = None
    dropout: float | None = None  # both rates while pretraining; None: the model's own
    vocab: str | None = None
    lowercase: bool | None = None
    objective: str | None = None  # default: the data's objective, or "nsp" for raw text
    steps: int = 1000
    batch_size: int = 32
    learning_rate: float = 1e-4
    warmup_steps: int | None = None  # default: 10% of steps
    weight_decay: float = 0.01
    optimizer: str = "adamw"
    clipnorm: float | None = 1.0
    gradient_accumulation_steps: int = 1
    sequence_length: int = 128
    max_predictions_per_seq: int | None = None
    masked_lm_prob: float = 0.15
    whole_word_masking: bool = False
    language: str = "en"
    layout: str = "sentences"
    encoding_errors: str = "replace"
    heldout_text: str | None = None
    heldout_data: str | None = None
    heldout_max_instances: int = 2048
    max_minutes: float | None = None  # stop after this much wall time even if `steps` are not done
    mixed_precision: str = "auto"
    jit_compile: bool = False
    steps_per_execution: int = 1
    tpu: str | None = None
    strategy: str = "auto"
    scale_learning_rate: str = "none"
    save_every_steps: int = 1000
    keep_checkpoints: int = 3  # newest step checkpoints kept; 0 keeps all (curves over a run's life)
    tensorboard: bool = True
    seed: int | None = 12345
    verbose: int | str = "auto"

    @classmethod
    def from_file(cls, path: str | os.PathLike, **overrides: Any) -> "PretrainConfig":
        """Reads a JSON or YAML file: run fields, plus BertConfig fields (top level or under "model")."""
        path = file_io.fspath(path)
        text = file_io.read_text(path)
        if os.path.splitext(path)[1] in (".yaml", ".yml"):
            import yaml

            data = yaml.safe_load(text) or {}
        else:
            data = json.loads(text)
        if not isinstance(data, dict):
            raise ValueError(f"{path}: expected a mapping of settings")
        run_fields = {f.name for f in dataclasses.fields(cls)}
        model_fields = {f.name for f in dataclasses.fields(BertConfig)}
        model = dict(data.pop("model", {}) or {})
        unknown = []
        fields: dict[str, Any] = {}
        for key, value in data.items():
            key = key.replace("-", "_")
            if key in RENAMED_KEYS:
                warnings.warn(f"{path}: {key} is deprecated; use {RENAMED_KEYS[key]}", FutureWarning, stacklevel=2)
                key = RENAMED_KEYS[key]
            if key in run_fields:
                fields[key] = value
            elif key in model_fields:
                model[key] = value
            elif key not in ("architectures", "model_type", "transformers_version"):
                unknown.append(key)
        if unknown:
            raise ValueError(f"{path}: unknown settings {sorted(unknown)}")
        fields["model"] = model
        fields.update({k: v for k, v in overrides.items() if v is not None})
        return cls(**fields)

    def validate(self) -> None:
        if not self.train:
            raise ValueError("train is required (a create-pretraining-data directory or text files)")
        if not self.out:
            raise ValueError("out is required")
        if self.objective is not None and self.objective not in OBJECTIVES:
            raise ValueError(f"objective must be one of {OBJECTIVES}, got {self.objective!r}")
        if self.steps < 1 or self.batch_size < 1:
            raise ValueError("steps and batch_size must be >= 1")
        if self.keep_checkpoints < 0:
            raise ValueError(f"keep_checkpoints must be >= 0 (0 keeps all), got {self.keep_checkpoints}")
        if self.heldout_text and self.heldout_data:
            raise ValueError("give heldout_text or heldout_data, not both")
        if self.dropout is not None and not 0 <= self.dropout < 1:
            raise ValueError(f"dropout must be in [0, 1), got {self.dropout}")
        if self.steps_per_execution < 1:
            raise ValueError(f"steps_per_execution must be >= 1, got {self.steps_per_execution}")
        batches = {"save_every_steps": min(self.save_every_steps, self.steps), "steps": self.steps}
        for name, steps in batches.items():
            if steps * self.gradient_accumulation_steps % self.steps_per_execution:
                raise ValueError(f"{name} ({steps}) x gradient_accumulation_steps "
                                 f"({self.gradient_accumulation_steps}) must divide by steps_per_execution "
                                 f"({self.steps_per_execution}): Keras stops only between executions")
