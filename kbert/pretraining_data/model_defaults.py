"""The pretraining-data defaults of each model type, in one table (`--model-type` of the data and pretrain commands).

    bert        objective nsp,  segment pairs,  tokens,             static masks  (Devlin et al. 2019)
    albert      objective sop,  segment pairs,  whole-word 3-grams, static masks  (Lan et al. 2020)
    roberta     objective none, full sentences, tokens,             dynamic masks (Liu et al. 2019)
    distilbert  objective none, full sentences, tokens,             dynamic masks (Sanh et al. 2019)

A setting the user gives wins over the table. Two settings follow each other when only one is given:
`packing="full-sentences"` makes the default objective "none" (there is no sentence pair), and an
objective "nsp" or "sop" makes the default packing "segment-pair". ALBERT's own script masks whole words
by default (`do_whole_word_mask=True`), so its n-grams are n whole words. DistilBERT was trained "with dynamic
masking and without the next sentence prediction objective", as RoBERTa; it has no segments to pair. This module
imports no TensorFlow.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kbert.constants import FULL_SENTENCES, SEGMENT_PAIR

MODEL_DEFAULTS: dict[str, dict[str, Any]] = {
    "bert": {"objective": "nsp", "packing": SEGMENT_PAIR, "ngram": 1, "whole_word_masking": False,
             "masking": "static"},
    "albert": {"objective": "sop", "packing": SEGMENT_PAIR, "ngram": 3, "whole_word_masking": True,
               "masking": "static"},
    "roberta": {"objective": "none", "packing": FULL_SENTENCES, "ngram": 1, "whole_word_masking": False,
                "masking": "dynamic"},
    "distilbert": {"objective": "none", "packing": FULL_SENTENCES, "ngram": 1, "whole_word_masking": False,
                   "masking": "dynamic"},
}
# `--layout full-sentences`: RoBERTa's input format named as a corpus layout, as its paper names it: a sentence a
# line (the "sentences" layout), packed as full sentences (`--packing full-sentences`).
CORPUS_LAYOUTS = ("sentences", "documents", "paragraphs", FULL_SENTENCES)


def resolve_layout(layout: str, packing: str | None) -> tuple[str, str | None]:
    """(corpus layout, packing) for `--layout LAYOUT --packing PACKING`; `full-sentences` is both.

    Example:
    >>> resolve_layout("full-sentences", None)
    ('sentences', 'full-sentences')
    >>> resolve_layout("documents", None)
    ('documents', None)
    """
    if layout != FULL_SENTENCES:
        return layout, packing
    if packing not in (None, FULL_SENTENCES):
        raise ValueError(f"--layout full-sentences packs full sentences; it cannot go with --packing {packing}")
    return "sentences", FULL_SENTENCES


# The model types `--model-type` takes (`kbert.config.MODEL_TYPES` names the checkpoint families that
# `BertConfig` reads, BERT's alone until the ALBERT and RoBERTa encoders land).
MODEL_TYPES = tuple(MODEL_DEFAULTS)
MODEL_TYPE_HELP = ("bert, albert, roberta or distilbert: sets the defaults of --objective, --packing, --ngram, "
                   "--whole-word-masking and --masking (bert: nsp, segment-pair, 1, off, static; albert: sop, "
                   "segment-pair, 3, on, static; roberta and distilbert: none, full-sentences, 1, off, dynamic); "
                   "given flags win")


def model_defaults(model_type: str, given: Mapping[str, Any]) -> dict[str, Any]:
    """The settings of `MODEL_DEFAULTS[model_type]`, with the ones in `given` (not None) in their place.

    Args:
        model_type: str. One of `MODEL_TYPES`.
        given: Mapping. Settings named as in `MODEL_DEFAULTS`; None means not given.

    Returns:
        A dict with every name of the table.

    Raises:
        ValueError: an unknown model type.

    Example:
        >>> model_defaults("albert", {"ngram": 2})["objective"], model_defaults("albert", {"ngram": 2})["ngram"]
        ('sop', 2)
        >>> model_defaults("bert", {"packing": "full-sentences"})["objective"]
        'none'
    """
    if model_type not in MODEL_DEFAULTS:
        raise ValueError(f"model_type must be one of {MODEL_TYPES}, got {model_type!r}.")
    settings = dict(MODEL_DEFAULTS[model_type])
    given = {name: value for name, value in given.items() if name in settings and value is not None}
    if given.get("packing") == FULL_SENTENCES:
        settings["objective"] = "none"
    if given.get("objective") in ("nsp", "sop"):
        settings["packing"] = SEGMENT_PAIR
    settings.update(given)
    return settings
