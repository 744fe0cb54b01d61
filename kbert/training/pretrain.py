"""Pretraining BERT with `fit`: data, model, optimizer, strategy, checkpoints and resume, in one call.

    config = PretrainConfig(train_data="corpus/*.txt", vocab="vocab.txt", out="run", steps=1000)
    pretrain(config)            # writes run/ that kbert.load_pretrained reads

`train_data` is either a `kbert create-pretraining-data` directory (static or dynamic masks, its
vocabulary and settings recorded inside) or raw text (a glob or "tfds:NAME"), masked on the fly.
`heldout_text` (masked with the run's own settings and a fixed seed) or `heldout_data` (a
create-pretraining-data directory) is scored at every checkpoint: `out/heldout/step_000500.json` and
TensorBoard scalars under `out/logs/heldout`.
"""

from __future__ import annotations

import dataclasses
import json
import os
from typing import Any

import kbert.file_io as file_io
from kbert.config import DROPOUT_FIELDS, BertConfig
from kbert.constants import OBJECTIVES


@dataclasses.dataclass
class PretrainConfig:
    """Every setting of a pretraining run; each is also a `kbert pretrain` flag (`--batch-size` ...).

    Model: `preset` (default "tiny") or `model` (BertConfig fields, e.g. from a bert_config.json),
    or `init`, a checkpoint to continue from (e.g. phase 1 of a two-phase run). `batch_size` is the
    global batch, split across the replicas of the strategy (it must divide by their number).
    Held-out evaluation at every checkpoint: `heldout_text` (text files, masked with the run's settings
    and a fixed seed) or `heldout_data` (a create-pretraining-data directory), at most
    `heldout_max_instances` instances. `encoding_errors` applies to raw-text `train_data` and
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
    """

    train_data: str = ""
    out: str = ""
    preset: str = "tiny"
    model: dict[str, Any] = dataclasses.field(default_factory=dict)
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
    max_seq_length: int = 128
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
    mixed_precision: str = "none"
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
        if not self.train_data:
            raise ValueError("train_data is required (a create-pretraining-data directory or text files)")
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


def _is_tfrecord_dir(path: str) -> bool:
    from kbert.pretraining_data.tfrecords import METADATA_FILE

    return file_io.isdir(path) and file_io.isfile(os.path.join(path, METADATA_FILE))


def _tokenizer(config: PretrainConfig, vocab_dir: str | None):
    from kbert.text import load_tokenizer

    source = config.vocab or vocab_dir or config.init
    if source is None:
        raise ValueError("Raw-text pretraining needs --vocab (or --init with a vocab.txt)")
    return load_tokenizer(source, lowercase=config.lowercase)


def _data_config(config: PretrainConfig, metadata: dict | None, objective: str):
    """The run's instance and masking settings: the data directory's, or the config's for raw text."""
    from kbert.pretraining_data.create import CreatePretrainingDataConfig

    names = ("max_seq_length", "max_predictions_per_seq", "masked_lm_prob", "whole_word_masking", "language",
             "layout", "encoding_errors")
    source = {n: getattr(config, n) for n in names}
    if metadata:
        source.update({n: metadata[n] for n in names + ("short_seq_prob",) if n in metadata})
        source["whole_word_masking"] = metadata.get("whole_word_masking", False)
    return CreatePretrainingDataConfig(objective=objective, seed=config.seed or 0, **source)


def _check_objective(path: str, data_objective: str, objective: str) -> None:
    if objective != "none" and objective != data_objective:
        raise ValueError(
            f"{path} was made for objective {data_objective!r}; cannot train {objective!r} on it "
            "(use --objective none for masked LM only, or recreate the data)"
        )


def _dataset(config: PretrainConfig, global_batch: int):
    """The training batches, the tokenizer (for the vocabulary saved with the model), the objective and
    the run's data settings (`CreatePretrainingDataConfig`)."""
    from kbert.pretraining_data.text_dataset import text_pretraining_dataset
    from kbert.pretraining_data.tfrecords import load_pretraining_dataset, read_pretraining_metadata

    if _is_tfrecord_dir(config.train_data):
        metadata = read_pretraining_metadata(config.train_data)
        objective = config.objective or metadata["objective"]
        _check_objective(config.train_data, metadata["objective"], objective)
        tokenizer = _tokenizer(
            dataclasses.replace(config, lowercase=metadata.get("lowercase") if config.lowercase is None
                                else config.lowercase),
            os.path.join(config.train_data, metadata.get("vocab_file", "vocab.txt")),
        )
        dataset = load_pretraining_dataset(config.train_data, global_batch, repeat=True, seed=config.seed)
        return dataset, tokenizer, objective, _data_config(config, metadata, objective)
    objective = config.objective or "nsp"
    tokenizer = _tokenizer(config, None)
    dataset = text_pretraining_dataset(
        config.train_data, tokenizer, max_seq_length=config.max_seq_length, batch_size=global_batch,
        max_predictions_per_seq=config.max_predictions_per_seq, masked_lm_prob=config.masked_lm_prob,
        objective="nsp" if objective == "none" else objective, whole_word=config.whole_word_masking,
        language=config.language, layout=config.layout, encoding_errors=config.encoding_errors, seed=config.seed,
    ).repeat()
    return dataset, tokenizer, objective, _data_config(config, None, objective)


def _shard(dataset, strategy, data: str | None = None):
    """This worker's share of `dataset`: by shard file of the `data` directory, else by record
    (`kbert.training.input_sharding`); None stays None."""
    from kbert.pretraining_data.tfrecords import tfrecord_files
    from kbert.training.input_sharding import shard_across_workers, worker_count

    workers = worker_count(strategy)
    if dataset is None or workers == 1:
        return dataset
    files = tfrecord_files(data, check_sizes=False) if data and _is_tfrecord_dir(data) else None
    return shard_across_workers(dataset, workers, files, source=data or "the input")


def _heldout(config: PretrainConfig, tokenizer, data_config, batch_size: int):
    """The held-out batches (fixed masks), or None when the run has no held-out set."""
    from kbert.pretraining_data import heldout
    from kbert.pretraining_data.tfrecords import read_pretraining_metadata

    if config.heldout_data:
        _check_objective(config.heldout_data, read_pretraining_metadata(config.heldout_data)["objective"],
                         data_config.objective)
        return heldout.heldout_from_directory(config.heldout_data, batch_size, config.heldout_max_instances)
    if config.heldout_text:
        text_config = dataclasses.replace(data_config, inputs=[config.heldout_text])
        return heldout.heldout_from_text(text_config, tokenizer, batch_size, config.heldout_max_instances)
    return None


def pretrain(config: PretrainConfig) -> dict[str, Any]:
    """Runs (or resumes) a pretraining run; returns a summary with the final metrics.

    Writes to `config.out`: the encoder and its heads in kbert's layout (`kbert.load_pretrained(out)`
    reads the encoder, `kbert.convert.checkpoints.load_pretrainer(out)` both), `vocab.txt`, `checkpoints/`
    (every `save_every_steps`, the newest `keep_checkpoints`), `backup/` (crash-resume state, removed when the run completes),
    `logs/` (TensorBoard), `heldout/step_NNNNNN.json` (held-out metrics at each checkpoint, when a
    held-out set is given) and `history.json`.
    """
    config.validate()
    # The strategy comes first: multi-worker collectives must be set up before TF initialises.
    from kbert.training.strategy import get_strategy, is_chief, scale_batch_and_lr

    strategy = get_strategy(config.strategy, tpu=config.tpu)

    import keras
    import tensorflow as tf

    from kbert.convert.checkpoints import load_pretrained, read_config, read_pretraining_heads, save_pretrained
    from kbert.models.bert_encoder import BertEncoder
    from kbert.models.bert_pretrainer import BertPretrainer
    from kbert.training.callbacks import (HeldoutLogger, StepClock, TimeLimit, fit_steps, restored_step,
                                          training_callbacks)
    from kbert.training.multi_worker import patch_model_for_multi_worker
    from kbert.training.optimizers import create_optimizer, set_mixed_precision
    from kbert.training.worker_outputs import remove_scratch
    from kbert.training.xla import check_fixed_shapes, compile_model, compiles_whole_step, explain_xla_errors

    compiled = compiles_whole_step(config.jit_compile, config.strategy)  # a TPU step is one XLA program

    if config.seed is not None:
        keras.utils.set_random_seed(config.seed)
    set_mixed_precision(config.mixed_precision)
    replicas = int(strategy.num_replicas_in_sync)
    if config.batch_size % replicas:
        raise ValueError(f"batch_size {config.batch_size} (the global batch) does not divide by {replicas} replicas")
    global_batch, learning_rate = scale_batch_and_lr(
        config.batch_size // replicas, config.learning_rate, strategy, scaling=config.scale_learning_rate
    )
    dataset, tokenizer, objective, data_config = _dataset(config, global_batch)
    dataset = _shard(dataset, strategy, config.train_data)
    heldout = _heldout(config, tokenizer, data_config, global_batch)
    if compiled:
        check_fixed_shapes(dataset.element_spec)
        if heldout is not None:  # `fit` evaluates it with the compiled step too: whole batches only
            rows = int(heldout.reduce(0, lambda n, batch: n + tf.shape(batch["token_ids"])[0]))
            if rows < global_batch:
                raise ValueError(f"the held-out set has {rows} instances, fewer than one batch of {global_batch}; "
                                 "a compiled step scores whole batches only")
            heldout = heldout.rebatch(global_batch, drop_remainder=True).apply(
                tf.data.experimental.assert_cardinality(rows // global_batch))
    heldout = _shard(heldout, strategy)  # in memory
    out = file_io.fspath(config.out)
    file_io.makedirs(out)

    base = (read_config(config.init) if config.init
            else BertConfig.from_preset(config.preset, vocab_size=tokenizer.vocabulary_size()))
    own_rates = {field: config.model.get(field, getattr(base, field)) for field in DROPOUT_FIELDS}
    run_rates = own_rates if config.dropout is None else dict.fromkeys(DROPOUT_FIELDS, config.dropout)
    with strategy.scope():
        if config.init:
            encoder = load_pretrained(config.init, **{**config.model, **run_rates})
        else:
            encoder = BertEncoder(**BertConfig.from_preset(
                config.preset, vocab_size=tokenizer.vocabulary_size(), **{**config.model, **run_rates}).to_dict())
        if encoder.bert_config.vocab_size != tokenizer.vocabulary_size():
            raise ValueError(
                f"The model's vocab_size {encoder.bert_config.vocab_size} differs from the vocabulary's "
                f"{tokenizer.vocabulary_size()} tokens"
            )
        pretrainer = BertPretrainer(encoder, objective=objective)
        if config.init:
            pretrainer.load_head_tensors(read_pretraining_heads(config.init), strict=False)
        warmup = config.warmup_steps if config.warmup_steps is not None else config.steps // 10
        optimizer = create_optimizer(
            learning_rate, num_train_steps=config.steps, warmup_steps=warmup,
            weight_decay=config.weight_decay, optimizer=config.optimizer, clipnorm=config.clipnorm,
            gradient_accumulation_steps=config.gradient_accumulation_steps,
        )
        compile_model(pretrainer, jit_compile=compiled, steps_per_execution=config.steps_per_execution,
                      optimizer=optimizer)
    patch_model_for_multi_worker(pretrainer)  # needed under several replicas, a no-op otherwise

    save_every = max(1, min(config.save_every_steps, config.steps))
    start = restored_step(out, save_every)
    if start:
        print(f"Resuming {out} from step {start}")
        dataset = dataset.skip(start * config.gradient_accumulation_steps)
    callbacks = training_callbacks(out, save_every, total_steps=config.steps, tensorboard=config.tensorboard,
                                   max_to_keep=config.keep_checkpoints or None)
    if heldout is not None and is_chief():
        callbacks.append(HeldoutLogger(file_io.join(out, "heldout"),
                                       file_io.join(out, "logs", "heldout") if config.tensorboard else None))
    if config.max_minutes is not None:
        callbacks.append(TimeLimit(config.max_minutes))
    clock = StepClock(config.gradient_accumulation_steps)
    callbacks.append(clock)
    with explain_xla_errors(compiled):
        history = pretrainer.fit(
            dataset,
            validation_data=heldout,
            callbacks=callbacks,
            verbose=config.verbose,
            **fit_steps(config.steps, save_every, config.gradient_accumulation_steps),
        )
    step = int(keras.ops.convert_to_numpy(pretrainer.optimizer.iterations))
    summary = {
        "steps": step,
        "objective": objective,
        "global_batch_size": global_batch,
        "replicas": int(strategy.num_replicas_in_sync),
        # After the first execution, evaluations and checkpoints included; the clock ticks once an execution.
        "seconds_per_step": (None if clock.seconds_per_step is None
                             else clock.seconds_per_step / config.steps_per_execution),
        "final_metrics": {k: float(v[-1]) for k, v in history.history.items() if not k.startswith("val_")},
        "heldout": {k[len("val_"):]: float(v[-1]) for k, v in history.history.items() if k.startswith("val_")},
        "history": {k: [float(x) for x in v] for k, v in history.history.items()},
        "config": dataclasses.asdict(config),
    }
    if is_chief():
        save_pretrained(pretrainer, out, vocabulary=tokenizer,
                        config=dataclasses.replace(encoder.bert_config, **own_rates))
        file_io.write_json(file_io.join(out, "history.json"), summary, default=str)
    remove_scratch()  # the other workers' checkpoints and backups
    return summary
