"""`PretrainConfig`: the settings of `kbert.training.pretrain.pretrain`, in a module without TensorFlow.

Its fields are `kbert pretrain`'s flags, so `kbert pretrain --help` reads them without loading TensorFlow.
"""

from __future__ import annotations

import dataclasses
import json
import os
from typing import Any

import kbert.file_io as file_io
from kbert.config import BertConfig
from kbert.constants import OBJECTIVES, PACKINGS, VERBOSE_HELP, VERBOSITIES
from kbert.precision import MIXED_PRECISION_HELP
from kbert.pretraining_data.instances import check_packing
from kbert.pretraining_data.model_defaults import CORPUS_LAYOUTS, MODEL_TYPES, resolve_layout


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
    time even if `steps` are not done (the learning-rate schedule still follows `steps`).
    `encoder_dropout` sets both dropout rates of the encoder for this run only: the saved model keeps the
    rates of its preset, `model` or `init`, the ones fine-tuning uses (a short run of a small model
    underfits, and learns faster and steps faster without dropout).
    `jit_compile` compiles the whole train step (and the held-out evaluation step) as one XLA program at
    fixed shapes, as a TPU runs it (always on with `strategy="tpu"`): the training batches are whole
    (`drop_remainder`) and repeat, the held-out set drops its short last batch, and an op XLA cannot
    compile raises. `steps_per_execution` runs that many batches per call of Keras' compiled loop;
    `save_every_steps` and `steps` (times `gradient_accumulation_steps`) must divide by it. `tpu`
    (with `strategy="tpu"`): `local` on a Cloud TPU VM, a TPU name or a grpc:// address (None: TPU_NAME).

    `train` is a create-pretraining-data directory or raw text (a glob or "tfds:NAME"); `sequence_length`,
    `max_predictions_per_seq`, `masked_lm_prob`, `whole_word_masking`, `ngram`, `packing`, `language` and
    `layout` are the raw-text settings, named as in `CreatePretrainingDataConfig` (a data directory brings
    its own). `model_type` picks the encoder family and, for raw text, the defaults of `objective`,
    `packing`, `ngram` and `whole_word_masking` (`kbert.pretraining_data.model_defaults`); a data
    directory's objective is the default objective of a run on it.

    Example:
        >>> config = PretrainConfig(train="corpus/*.txt", vocab="vocab.txt", out="run", steps=1000)
        >>> config.sequence_length
        128
    """

    train: str = dataclasses.field(default="", metadata={
        "help": "training data: a create-pretraining-data directory, or raw text: a file glob or tfds:NAME"})
    out: str = dataclasses.field(default="", metadata={
        "help": "output directory (checkpoints, logs, the final model)"})
    model_type: str = dataclasses.field(default="bert", metadata={
        "help": "bert, albert, roberta or distilbert: the encoder family, and for raw text the defaults of "
                "--objective, --packing, --ngram and --whole-word-masking (as in create-pretraining-data); given "
                "flags win. With --init: the checkpoint's family",
        "choices": MODEL_TYPES})
    preset: str = dataclasses.field(default="tiny", metadata={
        "help": "model size when not given by --config or --init: tiny, mini, small, medium, base, large"})
    model: dict[str, Any] = dataclasses.field(default_factory=dict, metadata={"cli": False})
    init: str | None = dataclasses.field(default=None, metadata={
        "help": "checkpoint directory (HF, Google or kbert) or model name (hf://ORG/NAME[@REVISION]) to start from, "
                "e.g. phase 1 of a two-phase run"})
    encoder_dropout: float | None = dataclasses.field(default=None, metadata={
        "help": "both dropout rates of the encoder while pretraining (0 suits a short run of a small model); "
                "the saved model keeps its own rates for fine-tuning"})
    vocab: str | None = dataclasses.field(default=None, metadata={
        "help": "vocab.txt for raw text (TFRecords directories carry their own)"})
    lowercase: bool | None = None
    objective: str | None = dataclasses.field(default=None, metadata={
        "help": "nsp, sop or none (default: the data's objective; raw text: from --model-type)",
        "choices": OBJECTIVES})
    steps: int = dataclasses.field(default=1000, metadata={"help": "total optimizer steps"})
    batch_size: int = dataclasses.field(default=32, metadata={
        "help": "global batch size: all replicas together (split across them; must divide by their count)"})
    learning_rate: float = 1e-4
    warmup_steps: int | None = dataclasses.field(default=None, metadata={
        "help": "linear warmup steps (default: 10% of --steps)"})
    weight_decay: float = 0.01
    optimizer: str = dataclasses.field(default="adamw", metadata={"help": "adamw or lamb"})
    clipnorm: float | None = 1.0
    gradient_accumulation_steps: int = 1
    sequence_length: int = dataclasses.field(default=128, metadata={
        "help": "raw text: length of a packed instance in tokens (TFRecords directories carry their own)"})
    max_predictions_per_seq: int | None = None
    masked_lm_prob: float = 0.15
    whole_word_masking: bool | None = dataclasses.field(default=None, metadata={
        "help": "raw text: mask all pieces of a word together (default: from --model-type)"})
    ngram: int | None = dataclasses.field(default=None, metadata={
        "help": "raw text: mask spans of 1..N words, p(n) ~ 1/n (default: from --model-type)"})
    packing: str | None = dataclasses.field(default=None, metadata={
        "help": "raw text: segment-pair or full-sentences (see create-pretraining-data; default: from "
                "--model-type)", "choices": PACKINGS})
    language: str = "en"
    layout: str = dataclasses.field(default="sentences", metadata={
        "help": "raw text: sentences, documents, paragraphs, or full-sentences (sentences packed as RoBERTa's "
                "FULL-SENTENCES; see create-pretraining-data)", "choices": CORPUS_LAYOUTS})
    encoding_errors: str = dataclasses.field(default="replace", metadata={
        "help": "raw text and --heldout-text: bytes that are not UTF-8: replace, ignore or strict"})
    heldout_text: str | None = dataclasses.field(default=None, metadata={
        "help": "held-out text file(s), masked with the run's settings and a fixed seed; masked-LM and "
                "NSP/SOP accuracy at every checkpoint go to OUT/heldout/step_NNNNNN.json and TensorBoard"})
    heldout_data: str | None = dataclasses.field(default=None, metadata={
        "help": "a held-out create-pretraining-data directory, scored like --heldout-text"})
    heldout_max_instances: int = dataclasses.field(default=2048, metadata={
        "help": "held-out instances scored (the first ones)"})
    max_minutes: float | None = dataclasses.field(default=None, metadata={
        "help": "stop after this many minutes of training even if --steps are not done"})
    mixed_precision: str = dataclasses.field(default="auto", metadata={"help": MIXED_PRECISION_HELP})
    jit_compile: bool = dataclasses.field(default=False, metadata={
        "help": "compile the whole train step as one XLA program at fixed shapes (what a TPU runs); an op "
                "XLA cannot compile is an error (always on with --strategy tpu)"})
    steps_per_execution: int = dataclasses.field(default=1, metadata={
        "help": "batches per call of the compiled loop (fewer host round trips, e.g. on a TPU); "
                "--save-every-steps and --steps must divide by it"})
    tpu: str | None = dataclasses.field(default=None, metadata={
        "help": "with --strategy tpu: 'local' on a Cloud TPU VM, a TPU name or a grpc:// address; unset: "
                "TPU_NAME"})
    strategy: str = dataclasses.field(default="auto", metadata={
        "help": "auto, one_device, mirrored, multi_worker (TF_CONFIG) or tpu"})
    scale_learning_rate: str = dataclasses.field(default="none", metadata={
        "help": "none, linear or sqrt: scale the learning rate with the replica count"})
    save_every_steps: int = dataclasses.field(default=1000, metadata={
        "help": "checkpoint (and crash-resume) interval in steps"})
    keep_checkpoints: int = dataclasses.field(default=3, metadata={
        "help": "newest step checkpoints kept in OUT/checkpoints; 0 keeps all"})
    tensorboard: bool = True
    seed: int | None = 12345
    verbose: int = dataclasses.field(default=1, metadata={"help": VERBOSE_HELP, "choices": VERBOSITIES})

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
            if key in run_fields:
                fields[key] = value
            elif key in model_fields:
                model[key] = value
            elif key not in ("architectures", "transformers_version"):
                unknown.append(key)
        if unknown:
            raise ValueError(f"{path}: unknown settings {sorted(unknown)}")
        fields["model"] = model
        fields.update({k: v for k, v in overrides.items() if v is not None})
        return cls(**fields)

    def __post_init__(self) -> None:
        self.layout, self.packing = resolve_layout(self.layout, self.packing)

    def validate(self) -> None:
        if not self.train:
            raise ValueError("train is required (a create-pretraining-data directory or text files)")
        if not self.out:
            raise ValueError("out is required")
        if self.objective is not None and self.objective not in OBJECTIVES:
            raise ValueError(f"objective must be one of {OBJECTIVES}, got {self.objective!r}")
        if self.model_type not in MODEL_TYPES:
            raise ValueError(f"model_type must be one of {MODEL_TYPES}, got {self.model_type!r}")
        if self.packing is not None:
            check_packing(self.packing, self.objective or "none")
        if self.steps < 1 or self.batch_size < 1:
            raise ValueError("steps and batch_size must be >= 1")
        if self.keep_checkpoints < 0:
            raise ValueError(f"keep_checkpoints must be >= 0 (0 keeps all), got {self.keep_checkpoints}")
        if self.heldout_text and self.heldout_data:
            raise ValueError("give heldout_text or heldout_data, not both")
        if self.encoder_dropout is not None and not 0 <= self.encoder_dropout < 1:
            raise ValueError(f"encoder_dropout must be in [0, 1), got {self.encoder_dropout}")
        if self.steps_per_execution < 1:
            raise ValueError(f"steps_per_execution must be >= 1, got {self.steps_per_execution}")
        batches = {"save_every_steps": min(self.save_every_steps, self.steps), "steps": self.steps}
        for name, steps in batches.items():
            if steps * self.gradient_accumulation_steps % self.steps_per_execution:
                raise ValueError(f"{name} ({steps}) x gradient_accumulation_steps "
                                 f"({self.gradient_accumulation_steps}) must divide by steps_per_execution "
                                 f"({self.steps_per_execution}): Keras stops only between executions")
