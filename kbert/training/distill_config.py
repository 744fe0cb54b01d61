"""`DistillConfig`: what a distillation adds to fine-tuning's settings, in a module without TensorFlow.

Its fields are `kbert distill`'s own flags; the training flags are `FinetuneConfig`'s (`kbert finetune`'s names)
less those that start a model (`NOT_DISTILLATION`), since the student comes from the teacher.
"""

from __future__ import annotations

import dataclasses

# `FinetuneConfig` fields that `kbert distill` does not take: the student replaces --init/--preset/--vocab
# (its tokenizer is the teacher's), the whole student trains, and the teacher runs on real tokens (no XLA step).
NOT_DISTILLATION = ("init", "preset", "vocab", "feature_based", "jit_compile", "steps_per_execution", "tpu")


@dataclasses.dataclass
class DistillConfig:
    """The teacher, the student and the loss of a distillation. Field names are `kbert distill`'s flags.

    Args:
        teacher: the teacher's model directory (`kbert finetune`'s output, read by `kbert.load_model`).
        student_layers: K of the teacher's transformer layers, evenly spaced from the first
            (`kbert.training.student.select_layers`), with its embeddings and head. Without any of the three
            student settings: every other layer (K = L // 2).
        student_init: a pretrained encoder checkpoint directory (any family) with the teacher's vocabulary.
        student_preset: a random encoder of the teacher's family at this preset size (e.g. "tiny").
        temperature: softens the teacher's and the student's distributions (logits outputs).
        alpha: weight of the distillation term on labelled batches: alpha * distill + (1 - alpha) * label loss;
            None: 0.5, or 1.0 when there is no labelled data (no `train`).
        hidden_weight: weight of TinyBERT's hidden-state loss (the student's embeddings and layer outputs, through
            learned projections, against the teacher's matched layers); 0: off.
        attention_weight: weight of MiniLM's attention loss (KL of the last layer's attention distributions; the
            student must have the teacher's number of heads); 0: off.
        unlabelled: text files the teacher labels on the fly (read by the task's
            `unlabelled_examples`: a .txt file is one text a line for classify and embed; otherwise the
            task's own format, labels not read); the student learns the teacher's outputs alone on them.
        cache_teacher: a directory for the teacher's outputs on the training batches
            (`kbert.training.teacher_cache`): computed in one pass and read back every epoch, and by a later run
            with the same teacher, data and batching; None: the teacher runs in every step, nothing is written.
    """

    teacher: str = dataclasses.field(metadata={"help": "the teacher's model directory (kbert finetune's output)"})
    student_layers: int | None = dataclasses.field(default=None, metadata={
        "help": "a student of K of the teacher's layers, evenly spaced from the first (every other one: layers "
                "0, 2, 4 of 6), with its embeddings, pooler and head (default without --student-init/--student-"
                "preset: half the teacher's layers)"})
    student_init: str | None = dataclasses.field(default=None, metadata={
        "help": "a pretrained encoder checkpoint directory (any family, the teacher's vocabulary) as the "
                "student's encoder, with a fresh head"})
    student_preset: str | None = dataclasses.field(default=None, metadata={
        "help": "a random encoder of the teacher's family at this preset size (e.g. tiny), the teacher's "
                "vocabulary, a fresh head"})
    temperature: float = dataclasses.field(default=2.0, metadata={
        "help": "softmax temperature of the teacher's soft targets and the student's outputs"})
    alpha: float | None = dataclasses.field(default=None, metadata={
        "help": "weight of the distillation loss: alpha * distill + (1 - alpha) * label loss (default 0.5; "
                "1.0 without --train)"})
    hidden_weight: float = dataclasses.field(default=0.0, metadata={
        "help": "weight of the hidden-state loss (TinyBERT): each student layer's output and the embeddings, through "
                "a learned projection, against the teacher layer it matches (default 0: off)"})
    attention_weight: float = dataclasses.field(default=0.0, metadata={
        "help": "weight of the attention loss (MiniLM): KL of the last layer's attention distributions, teacher to "
                "student; needs the teacher's number of heads (default 0: off)"})
    unlabelled: list[str] | None = dataclasses.field(default=None, metadata={
        "help": "files of texts without labels, labelled by the teacher on the fly (a .txt file: one text a "
                "line, for classify and embed; else the task's own format, labels not read)"})
    cache_teacher: str | None = dataclasses.field(default=None, metadata={
        "help": "write the teacher's outputs on the training batches to this directory in one pass and train on "
                "them (the teacher then runs once, not every epoch; each epoch reorders the first pass's batches); "
                "a later run with the same teacher, data and batching reads them back (default: the teacher runs "
                "in every step and nothing is written)"})

    def resolved_alpha(self, has_labels: bool) -> float:
        """`alpha`, or its default: 0.5 with labelled data, 1.0 without."""
        if self.alpha is not None:
            return self.alpha
        return 0.5 if has_labels else 1.0
