"""BERT's learning-rate schedule, kept importable from here; it lives in `kbert.optim.schedules`."""

from kbert.optim.schedules import LinearWarmupLinearDecay

__all__ = ["LinearWarmupLinearDecay"]
