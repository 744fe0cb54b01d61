"""`ExportSource`: what an export is built from (model, tokenizer, task), read from a model directory.

`kbert.export.savedmodel` and `kbert.export.tflite_convert` both build their `ServingModule` from it with
`build_module`.
"""

from __future__ import annotations

import dataclasses
import os

import keras

import kbert.file_io as file_io
from kbert.file_io.model_source import resolve_model
from kbert.export.serving_module import ServingModule
from kbert.tasks.base import Task
from kbert.text import BertTokenizer


@dataclasses.dataclass
class ExportSource:
    """What an export is built from: a model, its tokenizer and its task.

    Args:
        model: the Keras task model, or a `BertEncoder` (with `kbert.tasks.registry.encoder_task()`).
        tokenizer: `BertTokenizer`.
        task: the `kbert.tasks.Task`, with its settings and labels (`model.task` of a loaded model
            directory); it makes the signatures and declares their inputs.
        sequence_length: int. The longest packed input.
        truncate: str. "round_robin" or "waterfall".

    Example:
    >>> source = ExportSource(model, tokenizer, ClassificationTask(labels=["neg", "pos"]), 128)  # doctest: +SKIP
    >>> export(source, "export/models/sst2/1")  # doctest: +SKIP
    """

    model: keras.Model
    tokenizer: BertTokenizer
    task: Task
    sequence_length: int
    truncate: str = "round_robin"

    @property
    def labels(self) -> list[str] | None:
        """The task's label names in id order, or None."""
        return self.task.labels


def load_source(path: str | os.PathLike, sequence_length: int | None = None, encoder: bool = False) -> ExportSource:
    """Reads a fine-tuned model directory (task.json), a sentence-transformers directory (the embed task, with
    its pooling, normalisation and `max_seq_length`) or a bare encoder checkpoint (the encoder task).

    Args:
        path: a `kbert.save_model` / `kbert finetune` directory, a sentence-transformers directory, or a
            kbert / HF / Google checkpoint; or a model name (`kbert.file_io.model_source`).
        sequence_length: overrides the training sequence length (encoder default: 128).
        encoder: bool. Export the checkpoint's encoder alone (the encoder task), also from a
            sentence-transformers directory.
    """
    from kbert.convert.checkpoints import load_pretrained
    from kbert.convert.sentence_transformers import is_sentence_transformers_dir
    from kbert.tasks.embedding import load_sentence_encoder
    from kbert.tasks.model_dir import TASK_FILE, load_model
    from kbert.tasks.registry import encoder_task
    from kbert.text import load_tokenizer

    path = resolve_model(path)
    if not file_io.isdir(path):
        raise FileNotFoundError(f"model directory not found: {path}")
    task_dir = file_io.isfile(file_io.join(path, TASK_FILE))
    if not encoder and (task_dir or is_sentence_transformers_dir(path)):
        model = load_model(path, compile=False) if task_dir else load_sentence_encoder(path)
        packer = model.preprocessor
        return ExportSource(model, model.tokenizer, model.task,
                            int(sequence_length or packer.sequence_length), packer.truncate)
    encoder = load_pretrained(path)
    return ExportSource(encoder, load_tokenizer(path), encoder_task(), int(sequence_length or 128))


def build_module(source: ExportSource, tokenizer: BertTokenizer | None = None) -> ServingModule:
    """The `ServingModule` of a source, tokenizing with `tokenizer` (default: the source's).

    Args:
        source: the `ExportSource`.
        tokenizer: optional `BertTokenizer`; `kbert.export.tflite_convert` passes a `TFLiteBertTokenizer` for the
            TFLite-convertible graph.

    Returns:
        The `ServingModule`.
    """
    return ServingModule(source.model, tokenizer or source.tokenizer, source.task,
                         sequence_length=source.sequence_length, truncate=source.truncate)
