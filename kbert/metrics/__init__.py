"""Task metrics: GLUE (accuracy, F1, Matthews, Pearson/Spearman), entity F1, SQuAD EM/F1.

Plain-Python/numpy functions, importable without TensorFlow. `MaskedAccuracy` (a Keras metric) is loaded
on first use so that importing this package stays light.
"""

from kbert.metrics.classification import (
    accuracy,
    classification_metrics,
    f1_score,
    matthews_corrcoef,
    pearson,
    regression_metrics,
    spearman,
)
from kbert.metrics.entity_f1 import entity_f1, entity_scores, extract_entities
from kbert.metrics.squad import exact_match, normalize_answer, squad_evaluate, token_f1

__all__ = [
    "MaskedAccuracy",
    "accuracy",
    "classification_metrics",
    "entity_f1",
    "entity_scores",
    "exact_match",
    "extract_entities",
    "f1_score",
    "matthews_corrcoef",
    "normalize_answer",
    "pearson",
    "regression_metrics",
    "spearman",
    "squad_evaluate",
    "token_f1",
]


def __getattr__(name: str):
    if name == "MaskedAccuracy":
        from kbert.metrics.keras_metrics import MaskedAccuracy

        return MaskedAccuracy
    raise AttributeError(f"module 'kbert.metrics' has no attribute {name!r}")
