"""Pretraining BERT with `fit`: data, model, optimizer, strategy, checkpoints and resume, in one call.

    config = PretrainConfig(train="corpus/*.txt", vocab="vocab.txt", out="run", steps=1000)
    pretrain(config)            # writes run/ that kbert.load_pretrained reads

`train` is either a `kbert create-pretraining-data` directory (static or dynamic masks, its
vocabulary and settings recorded inside) or raw text (a glob or "tfds:NAME"), masked on the fly.
`heldout_text` (masked with the run's own settings and a fixed seed) or `heldout_data` (a
create-pretraining-data directory) is scored at every checkpoint: `out/heldout/step_000500.json` and
TensorBoard scalars under `out/logs/heldout`.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import kbert.file_io as file_io
from kbert.config import DROPOUT_FIELDS
from kbert.constants import SEGMENT_PAIR
from kbert.training.pretrain_config import PretrainConfig


def _is_tfrecord_dir(path: str) -> bool:
    from kbert.pretraining_data.shards import METADATA_FILE

    return file_io.isdir(path) and file_io.isfile(file_io.join(path, METADATA_FILE))


def _tokenizer(config: PretrainConfig, vocab_dir: str | None):
    from kbert.text import load_tokenizer

    source = config.vocab or vocab_dir or config.init
    if source is None:
        raise ValueError("Raw-text pretraining needs --vocab (or --init with a vocab.txt)")
    return load_tokenizer(source, lowercase=config.lowercase)


def _data_config(config: PretrainConfig, metadata: dict | None, objective: str | None):
    """The run's instance and masking settings: the data directory's, or the config's for raw text (where
    `model_type` gives the defaults of what the config leaves at None)."""
    from kbert.pretraining_data.create import CreatePretrainingDataConfig

    names = ("sequence_length", "max_predictions_per_seq", "masked_lm_prob", "whole_word_masking", "ngram",
             "packing", "language", "layout", "encoding_errors")
    source = {n: getattr(config, n) for n in names}
    if metadata:
        source.update({n: metadata[n] for n in names + ("short_seq_prob",) if n in metadata})
        source.update(whole_word_masking=metadata.get("whole_word_masking", False), ngram=metadata.get("ngram", 1),
                      packing=metadata.get("packing", SEGMENT_PAIR))
    return CreatePretrainingDataConfig(model_type=config.model_type, objective=objective, seed=config.seed or 0,
                                       **source)


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
    from kbert.pretraining_data.shards import read_pretraining_metadata
    from kbert.pretraining_data.tfrecords import load_pretraining_dataset

    if _is_tfrecord_dir(config.train):
        metadata = read_pretraining_metadata(config.train)
        objective = config.objective or metadata["objective"]
        _check_objective(config.train, metadata["objective"], objective)
        tokenizer = _tokenizer(  # the tokenizer files that create-pretraining-data copied into the directory
            dataclasses.replace(config, lowercase=metadata.get("lowercase") if config.lowercase is None
                                else config.lowercase),
            config.train,
        )
        dataset = load_pretraining_dataset(config.train, global_batch, repeat=True, seed=config.seed)
        return dataset, tokenizer, objective, _data_config(config, metadata, objective)
    tokenizer = _tokenizer(config, None)
    data_config = _data_config(config, None, config.objective)
    objective = data_config.objective
    pairs = objective == "none" and data_config.packing == SEGMENT_PAIR  # MLM alone on NSP's segment pairs
    text_config = dataclasses.replace(data_config, input=[config.train], dupe_factor=1,
                                      objective="nsp" if pairs else objective)
    dataset = text_pretraining_dataset(text_config, tokenizer, batch_size=global_batch).repeat()
    return dataset, tokenizer, objective, data_config


def _shard(dataset, strategy, data: str | None = None):
    """This worker's share of `dataset`: by shard file of the `data` directory, else by record
    (`kbert.training.input_sharding`); None stays None."""
    from kbert.pretraining_data.shards import tfrecord_files
    from kbert.training.input_sharding import shard_across_workers, worker_count

    workers = worker_count(strategy)
    if dataset is None or workers == 1:
        return dataset
    files = tfrecord_files(data, check_sizes=False) if data and _is_tfrecord_dir(data) else None
    return shard_across_workers(dataset, workers, files, source=data or "the input")


def _heldout(config: PretrainConfig, tokenizer, data_config, batch_size: int):
    """The held-out batches (fixed masks), or None when the run has no held-out set."""
    from kbert.pretraining_data import heldout
    from kbert.pretraining_data.shards import read_pretraining_metadata

    if config.heldout_data:
        _check_objective(config.heldout_data, read_pretraining_metadata(config.heldout_data)["objective"],
                         data_config.objective)
        return heldout.heldout_from_directory(config.heldout_data, batch_size, config.heldout_max_instances)
    if config.heldout_text:
        text_config = dataclasses.replace(data_config, input=[config.heldout_text])
        return heldout.heldout_from_text(text_config, tokenizer, batch_size, config.heldout_max_instances)
    return None


def pretrain(config: PretrainConfig) -> dict[str, Any]:
    """Runs (or resumes) a pretraining run; returns a summary with the final metrics.

    Writes to `config.out`: the encoder and its heads in kbert's layout (`kbert.load_pretrained(out)`
    reads the encoder, `kbert.convert.checkpoints.load_pretrainer(out)` both), `vocab.txt`, `checkpoints/`
    (every `save_every_steps`, the newest `keep_checkpoints`), `backup/` (crash-resume state, removed when the run completes),
    `logs/` (TensorBoard), `heldout/step_NNNNNN.json` (held-out metrics at each checkpoint, when a
    held-out set is given) and `history.json`. That is the chief's; another worker of a multi-worker run
    writes the same to a temporary directory, removed at the end (`kbert.training.worker_outputs`).
    """
    config.validate()
    from kbert.training.run_setup import run_setup

    with run_setup(config.strategy, config.tpu, config.mixed_precision) as strategy:  # for this run only
        return _pretrain(config, strategy)


def _pretrain(config: PretrainConfig, strategy) -> dict[str, Any]:
    """`pretrain` under `strategy` and the run's dtype policy (both set by `run_setup`)."""
    import keras
    import tensorflow as tf

    from kbert.convert.checkpoints import read_config, read_pretraining_heads, save_pretrained
    from kbert.models.bert_pretrainer import BertPretrainer
    from kbert.optim.defaults import create_optimizer
    from kbert.training.callbacks import HeldoutLogger, fit_steps, restored_step, training_callbacks
    from kbert.training.keras_multi_worker_patch import patch_model_for_multi_worker
    from kbert.training.run_setup import build_encoder, encoder_config
    from kbert.training.strategy import scale_batch_and_lr
    from kbert.training.time_callbacks import StepClock, TimeLimit
    from kbert.training.worker_outputs import write_dir
    from kbert.training.xla import check_fixed_shapes, compile_model, compiles_whole_step, explain_xla_errors

    compiled = compiles_whole_step(config.jit_compile, config.strategy)  # a TPU step is one XLA program
    if config.init is not None and config.model_type == "bert":  # --init continues the checkpoint's family
        config = dataclasses.replace(config, model_type=read_config(config.init).model_type)

    if config.seed is not None:
        keras.utils.set_random_seed(config.seed)
    replicas = int(strategy.num_replicas_in_sync)
    if config.batch_size % replicas:
        raise ValueError(f"batch_size {config.batch_size} (the global batch) does not divide by {replicas} replicas")
    global_batch, learning_rate = scale_batch_and_lr(
        config.batch_size // replicas, config.learning_rate, strategy, scaling=config.scale_learning_rate
    )
    dataset, tokenizer, objective, data_config = _dataset(config, global_batch)
    dataset = _shard(dataset, strategy, config.train)
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
    out = file_io.fspath(config.out)  # every worker resumes from the chief's checkpoints here
    written = file_io.fspath(write_dir(out))  # where this worker writes: `out` on the chief, else scratch
    file_io.makedirs(written)

    base = encoder_config(tokenizer.vocabulary_size(), config.init, config.preset)
    own_rates = {field: config.model.get(field, getattr(base, field)) for field in DROPOUT_FIELDS}
    run_rates = own_rates if config.encoder_dropout is None else dict.fromkeys(DROPOUT_FIELDS, config.encoder_dropout)
    with strategy.scope():
        encoder = build_encoder(tokenizer.vocabulary_size(), config.init, config.preset, model_type=config.model_type,
                                pad_token_id=tokenizer.pad_token_id, **{**config.model, **run_rates})
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
    if heldout is not None:
        callbacks.append(HeldoutLogger(file_io.join(written, "heldout"),
                                       file_io.join(written, "logs", "heldout") if config.tensorboard else None))
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
        # The weights the run started from; for a Hugging Face Hub name, its repository and commit.
        "init": file_io.resolve_source(config.init).record() if config.init is not None else None,
    }
    save_pretrained(pretrainer, written, vocabulary=tokenizer,
                    config=dataclasses.replace(encoder.bert_config, **own_rates))
    file_io.write_json(file_io.join(written, "history.json"), summary, default=str)
    return summary
