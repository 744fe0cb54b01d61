"""`FinetuneConfig`: the settings of `kbert.training.finetune.finetune`, in a module without TensorFlow.

Its fields are `kbert finetune`'s flags, so `kbert finetune --help` reads them without loading TensorFlow.
`kbert.training.finetune` re-exports it.
"""

from __future__ import annotations

import dataclasses

@dataclasses.dataclass
class FinetuneConfig:
    """How to fine-tune: data, starting point and BERT's recipe. Field names are `kbert finetune`'s flags.

    Args:
        train: training data, a file path or `tfds:NAME[:SPLIT]`.
        out: model directory to write.
        validation: validation data (None: no metrics.json).
        init: directory `kbert.load_pretrained` reads; None starts from a random `preset` encoder with the
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
        seed: shuffling and initialisation seed. verbose: 0 silences Keras' progress bars.
        jit_compile: compile the whole train step as one XLA program at fixed shapes (what a TPU runs):
            batches padded to `sequence_length`, the short last batch dropped, no length grouping, the
            data repeated for `epochs` epochs of `examples // batch_size` steps (down to a multiple of
            `steps_per_execution`). An op XLA cannot compile raises. Always on with `strategy="tpu"`.
        steps_per_execution: train steps per call of Keras' compiled loop (fewer host round trips, e.g.
            on a TPU); callbacks and the progress bar see every N-th step.
        tpu: with `strategy="tpu"`: `local` on a Cloud TPU VM, a TPU name or a grpc:// address (None:
            TPU_NAME).
    """

    train: str
    out: str
    validation: str | None = None
    init: str | None = None
    preset: str = "tiny"
    vocab: str | None = None
    sequence_length: int = 128
    epochs: int = 3
    batch_size: int = 32
    learning_rate: float = 5e-5
    warmup_ratio: float = 0.1
    weight_decay: float = 0.01
    dropout: float = 0.1
    feature_based: bool = False
    strategy: str = "auto"
    mixed_precision: str = "auto"
    max_train_examples: int | None = None
    max_validation_examples: int | None = None
    group_by_length: bool = True
    seed: int = 0
    verbose: int = 1
    jit_compile: bool = False
    steps_per_execution: int = 1
    tpu: str | None = None
