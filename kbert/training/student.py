"""The student of a distillation: the teacher's own layers, a pretrained encoder, or a fresh one of a preset size.

Three ways to start a student, all with the teacher's tokenizer (the teacher's outputs are per token of it):

- `layers=K`: K of the teacher's transformer layers, evenly spaced from the first (`select_layers`: layer
  i * L // K for i < K, every other one for K = L / 2, as DistilBERT initialised its student), with the
  teacher's embeddings, pooler and task head copied; K = L is the teacher itself. ALBERT's shared groups stay
  shared: the student keeps the teacher's `num_hidden_groups` and its group weights, and runs them over K
  layers (a student layer must then run the group its teacher layer ran: K >= the number of groups).
- `init=DIR`: a pretrained encoder checkpoint of any family (`kbert.load_pretrained`), with a fresh head; its
  vocabulary must be the teacher's.
- `preset=NAME`: a random encoder of the teacher's family at a preset size ("tiny", "mini", ...; or a
  checkpoint directory whose architecture is built with fresh weights), with the teacher's vocabulary size,
  positions and segments, and a fresh head.
"""

from __future__ import annotations

import dataclasses
from typing import Any, NamedTuple

import keras

from kbert.models.bert_encoder import BertEncoder
from kbert.models.families import encoder_from_config
from kbert.tasks.base import Task
from kbert.text import load_tokenizer
from kbert.training.run_setup import build_encoder


class Student(NamedTuple):
    """A student task model and where it came from.

    Attributes:
        model: the task model (`task.build_model` on the student's encoder).
        origin: what the model directory records of it: {"layers": [teacher layer of each student layer]},
            {"init": DIR} or {"preset": NAME}.
    """

    model: keras.Model
    origin: dict[str, Any]


def select_layers(teacher_layers: int, student_layers: int) -> list[int]:
    """The teacher layers a K-layer student keeps: i * L // K for i < K (evenly spaced, the first kept).

    Example:
    >>> select_layers(6, 3), select_layers(12, 6), select_layers(4, 3)
    ([0, 2, 4], [0, 2, 4, 6, 8, 10], [0, 1, 2])
    """
    if not 1 <= student_layers <= teacher_layers:
        raise ValueError(f"a student of {student_layers} layers cannot be taken from a teacher of {teacher_layers} "
                         f"layers (1 to {teacher_layers})")
    return [i * teacher_layers // student_layers for i in range(student_layers)]


def encoder_from_layers(teacher: BertEncoder, layers: list[int]) -> BertEncoder:
    """An encoder of the teacher's family and shape with `len(layers)` hidden layers: student layer j is a copy
    of teacher layer `layers[j]`, and every other weight (embeddings, projection, pooler) the teacher's.

    Raises:
        ValueError: a student block would need the weights of two teacher blocks (ALBERT with fewer student
            layers than groups, or groups that do not line up).
    """
    config = dataclasses.replace(teacher.bert_config, num_hidden_layers=len(layers))
    student = encoder_from_config(config, dtype=teacher.embeddings.dtype_policy)
    teacher_blocks, student_blocks = teacher.layer_blocks(), student.layer_blocks()
    source: dict[int, int] = {}  # id(student block) -> id(the teacher block it copies)
    for j, i in enumerate(layers):
        for mine, theirs in zip(student_blocks[j], teacher_blocks[i], strict=True):
            if source.setdefault(id(mine), id(theirs)) != id(theirs):
                raise ValueError(f"student layer {j} shares its blocks with an earlier layer, but takes teacher layer "
                                 f"{i}'s, which are others: keep at least as many layers as the teacher has groups "
                                 f"({getattr(config, 'num_hidden_groups', 1)})")
            mine.set_weights(theirs.get_weights())
    blocks = {id(block) for group in teacher_blocks for block in group}
    for layer in teacher.layers:
        if id(layer) not in blocks and layer.weights:
            student.get_layer(layer.name).set_weights(layer.get_weights())
    return student


def copy_head(teacher: keras.Model, student: keras.Model) -> None:
    """Copies the task head (every weighted layer of the task model besides its encoder) from teacher to student."""
    for layer in teacher.layers:
        if layer is not teacher.encoder and layer.weights:
            student.get_layer(layer.name).set_weights(layer.get_weights())


def build_student(teacher: keras.Model, task: Task, *, layers: int | None = None, init: str | None = None,
                  preset: str | None = None, dropout: float = 0.1) -> Student:
    """The student task model of a distillation, in one of three ways (module docstring); by default the
    teacher's every other layer (K = max(1, L // 2)).

    Args:
        teacher: the teacher task model (`kbert.load_model`), with its `tokenizer` when `init` is given.
        task: the task of both.
        layers: int. K of the teacher's layers (`select_layers`), with its embeddings and head.
        init: a pretrained encoder checkpoint directory (`kbert.load_pretrained`), any family.
        preset: a preset size of the teacher's family, or a checkpoint directory (architecture only).
        dropout: float. The head's dropout.

    Returns:
        `Student(model, origin)`.

    Raises:
        ValueError: more than one of `layers`, `init`, `preset`; K out of 1..L; a checkpoint whose vocabulary is
            not the teacher's.

    Example:
    >>> import kbert
    >>> teacher = kbert.load_model("sst2_teacher/")  # doctest: +SKIP
    >>> build_student(teacher, teacher.task, layers=3).origin  # doctest: +SKIP
    {'layers': [0, 2, 4]}
    """
    given = [name for name, value in (("layers", layers), ("init", init), ("preset", preset)) if value is not None]
    if len(given) > 1:
        raise ValueError(f"a student is built one way: got {' and '.join(given)}")
    encoder: BertEncoder = teacher.encoder
    config = encoder.bert_config
    vocabulary_size = config.vocab_size
    if init is not None:
        _check_vocabulary(init, getattr(teacher, "tokenizer", None))
        student = task.build_model(build_encoder(vocabulary_size, init=init), dropout=dropout)
        return Student(student, {"init": str(init)})
    if preset is not None:
        tokenizer = getattr(teacher, "tokenizer", None)
        fresh = build_encoder(vocabulary_size, preset=preset, model_type=config.model_type,
                              pad_token_id=tokenizer.pad_token_id if tokenizer is not None else None,
                              max_position_embeddings=config.max_position_embeddings,
                              type_vocab_size=config.type_vocab_size)
        return Student(task.build_model(fresh, dropout=dropout), {"preset": str(preset)})
    kept = select_layers(config.num_hidden_layers, max(1, config.num_hidden_layers // 2) if layers is None else layers)
    student = task.build_model(encoder_from_layers(encoder, kept), dropout=dropout)
    copy_head(teacher, student)
    return Student(student, {"layers": kept})


def _check_vocabulary(init: str, tokenizer: Any) -> None:
    """ValueError when `init` has a vocabulary of its own that is not the teacher tokenizer's."""
    if tokenizer is None:
        return
    try:
        theirs = load_tokenizer(init).get_vocabulary()
    except (OSError, ValueError):
        return  # a checkpoint without tokenizer files: its vocab_size is checked against the teacher's
    if list(theirs) != list(tokenizer.get_vocabulary()):
        raise ValueError(f"{init}'s vocabulary ({len(theirs)} tokens) is not the teacher's "
                         f"({tokenizer.vocabulary_size()} tokens): a student reads the teacher's tokens")
