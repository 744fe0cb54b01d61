"""`FinetuneConfig`: the settings of `kbert.training.finetune.finetune`, in a module without TensorFlow.

Its fields are `kbert finetune`'s flags, so `kbert finetune --help` reads them without loading TensorFlow.
`kbert.training.finetune` re-exports it.
"""

from __future__ import annotations

import dataclasses

from kbert.constants import STRATEGY_NAMES, VERBOSE_HELP, VERBOSITIES
from kbert.precision import MIXED_PRECISION_HELP, MIXED_PRECISIONS


@dataclasses.dataclass
class FinetuneConfig:
    """How to fine-tune: data, starting point and BERT's recipe. Field names are `kbert finetune`'s flags.

    Args:
        train: training data, a file path or `tfds:NAME[:SPLIT]`.
        out: model directory to write.
        validation: validation data (None: no metrics.json).
        init: directory or model name `kbert.load_pretrained` reads (its source goes to DIR/init.json); None starts from a random `preset` encoder with the
            `vocab` vocabulary (the "from scratch" baseline).
        preset: encoder size without `init`: a preset name, or a checkpoint directory whose architecture
            is built with fresh weights (the baseline of the same model). vocab: vocab.txt without `init`.
        sequence_length: packing length in tokens (the longest model input).
        epochs, batch_size, learning_rate, warmup_ratio, weight_decay: BERT's recipe (AdamW, linear warmup
            over `warmup_ratio` of the steps, then linear decay to 0; gradients clipped at 1).
            `batch_size` is the global batch, split over the replicas.
        dropout: head dropout. feature_based: freeze the encoder, train the head only.
        strategy: `kbert.training.strategy.get_strategy` name. mixed_precision: one of
            `kbert.precision.MIXED_PRECISIONS`; "auto", the default (`kbert.precision.resolve_mixed_precision`):
            bf16 on a CPU with AMX or AVX512-BF16, float16 on a GPU, float32 elsewhere (on SST-2 bf16
            training scored within 0.2 points of float32 over 3 seeds, BENCHMARKS.md); the previous policy
            is restored afterwards.
        max_train_examples, max_validation_examples: keep only the first N examples.
        group_by_length: batch training examples of similar length together (each run of 16 shuffled
            batches sorted by token count, `kbert.data_pipeline.index_batches`; for classification, each
            label in length order, interleaved in its share): dynamic padding then pads little. An epoch
            of 16 batches or fewer keeps random batches (sorted whole, it would be the same batches for
            every seed). False: plain random batches.
        seed: shuffling and initialisation seed. verbose: Keras' progress output, 0, 1 or 2 (0: none).
        jit_compile: compile the whole train step as one XLA program at fixed shapes (what a TPU runs):
            batches padded to `sequence_length`, the short last batch dropped, no length grouping, the
            data repeated for `epochs` epochs of `examples // batch_size` steps (down to a multiple of
            `steps_per_execution`). An op XLA cannot compile raises. Always on with `strategy="tpu"`.
        steps_per_execution: train steps per call of Keras' compiled loop (fewer host round trips, e.g.
            on a TPU); callbacks and the progress bar see every N-th step.
        tpu: with `strategy="tpu"`: `local` on a Cloud TPU VM, a TPU name or a grpc:// address (None:
            TPU_NAME).
    """

    train: str = dataclasses.field(metadata={"help": "training data: a file or tfds:NAME[:SPLIT]"})
    out: str = dataclasses.field(metadata={"help": "model directory to write"})
    validation: str | None = dataclasses.field(default=None, metadata={
        "help": "validation data: a file or tfds:NAME[:SPLIT]"})
    init: str | None = dataclasses.field(default=None, metadata={
        "help": "pretrained checkpoint directory (HF, Google or kbert) or model name (hf://ORG/NAME[@REVISION], or "
                "ORG/NAME when no such directory exists); without it training starts from random weights of "
                "--preset"})
    preset: str = dataclasses.field(default="tiny", metadata={
        "help": "encoder size when there is no --init: a preset name (default tiny) or a checkpoint "
                "directory, whose architecture is built with fresh weights"})
    vocab: str | None = dataclasses.field(default=None, metadata={
        "help": "vocab.txt for training from random weights (required without --init)"})
    sequence_length: int = dataclasses.field(default=128, metadata={
        "help": "packing length in tokens (the window length of a task that reads long texts in windows)"})
    epochs: int = dataclasses.field(default=3, metadata={"help": "passes over the training data"})
    batch_size: int = dataclasses.field(default=32, metadata={
        "help": "global batch size: the examples of one step summed over all replicas (default 32)"})
    learning_rate: float = dataclasses.field(default=5e-5, metadata={"help": "peak learning rate of AdamW"})
    warmup_ratio: float = dataclasses.field(default=0.1, metadata={"help": "fraction of steps with linear warmup"})
    weight_decay: float = dataclasses.field(default=0.01, metadata={
        "help": "AdamW weight decay (not on LayerNorm and biases)"})
    dropout: float = dataclasses.field(default=0.1, metadata={"help": "dropout before the head"})
    feature_based: bool = dataclasses.field(default=False, metadata={
        "help": "freeze the encoder, train the head only"})
    strategy: str = dataclasses.field(default="auto", metadata={
        "help": "tf.distribute strategy: multi_worker reads TF_CONFIG", "choices": STRATEGY_NAMES})
    mixed_precision: str = dataclasses.field(default="auto", metadata={
        "help": MIXED_PRECISION_HELP, "choices": MIXED_PRECISIONS})
    max_train_examples: int | None = dataclasses.field(default=None, metadata={
        "help": "use only the first N training examples"})
    max_validation_examples: int | None = dataclasses.field(default=None, metadata={
        "help": "use only the first N validation examples"})
    group_by_length: bool = dataclasses.field(default=True, metadata={
        "help": "batch training examples of similar length together, so batches pad less; with class labels, "
                "every batch keeps their shares in the data; an epoch of up to 16 batches stays random "
                "(default: on; --no-group-by-length for plain random batches)"})
    seed: int = dataclasses.field(default=0, metadata={"help": "shuffling and initialisation seed"})
    verbose: int = dataclasses.field(default=1, metadata={"help": VERBOSE_HELP, "choices": VERBOSITIES})
    jit_compile: bool = dataclasses.field(default=False, metadata={
        "help": "compile the whole train step as one XLA program at fixed shapes (what a TPU runs): batches "
                "padded to --sequence-length, the last short batch dropped, no length grouping; an op XLA "
                "cannot compile is an error (always on with --strategy tpu)"})
    steps_per_execution: int = dataclasses.field(default=1, metadata={
        "help": "train steps per call of the compiled loop (fewer host round trips, e.g. on a TPU)"})
    tpu: str | None = dataclasses.field(default=None, metadata={
        "help": "with --strategy tpu: 'local' on a Cloud TPU VM, a TPU name or a grpc:// address "
                "(default: TPU_NAME)"})
