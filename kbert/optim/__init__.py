"""Optimizers for BERT, below the models: every `compile()` default and `kbert.training` build on them.

- `create_optimizer`: the one place BERT's optimizer defaults are written.
- `AdamW`: PyTorch / Hugging Face AdamW (or Google's original rule with `bias_correction=False`).
- `Lamb`, `GradientAccumulation`, `LinearWarmupLinearDecay`.
"""

from kbert.optim.accumulation import GradientAccumulation
from kbert.optim.adamw import AdamW
from kbert.optim.defaults import OPTIMIZERS, WEIGHT_DECAY_EXCLUDE, create_optimizer
from kbert.optim.lamb import Lamb
from kbert.optim.schedules import LinearWarmupLinearDecay

__all__ = [
    "OPTIMIZERS", "WEIGHT_DECAY_EXCLUDE", "AdamW", "GradientAccumulation", "Lamb",
    "LinearWarmupLinearDecay", "create_optimizer",
]
