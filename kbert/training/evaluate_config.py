"""`EvaluateConfig`: the settings of `kbert evaluate` (`kbert.training.finetune.evaluate_model`), without TensorFlow.

Its fields are `kbert evaluate`'s flags, so `kbert evaluate --help` reads them without loading TensorFlow.
"""

from __future__ import annotations

import dataclasses

from kbert.constants import VERBOSE_HELP, VERBOSITIES


@dataclasses.dataclass
class EvaluateConfig:
    """What `kbert evaluate` scores and how; the task's own settings come from the model directory.

    Args:
        model_dir: str. A model directory written by `kbert finetune` (`evaluate_model`'s `directory`).
        input: str. The data to score: a file or `tfds:NAME[:SPLIT]`, with the training columns
            (`evaluate_model`'s `data`).
        batch_size: int. Prediction batch size.
        max_examples: int or None. Score only the first N examples.
        verbose: int. Keras' progress output, 0, 1 or 2 (0: none).

    Example:
        >>> EvaluateConfig("models/sst2", "dev.tsv").batch_size
        64
    """

    model_dir: str = dataclasses.field(metadata={
        "positional": True, "metavar": "DIR", "help": "model directory written by `kbert finetune`"})
    input: str = dataclasses.field(metadata={
        "help": "a file or tfds:NAME[:SPLIT], with the training columns"})
    batch_size: int = dataclasses.field(default=64, metadata={"help": "prediction batch size"})
    max_examples: int | None = dataclasses.field(default=None, metadata={
        "help": "score only the first N examples"})
    verbose: int = dataclasses.field(default=1, metadata={"help": VERBOSE_HELP, "choices": VERBOSITIES})
