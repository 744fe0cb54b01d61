"""`MaskingVocabulary`: what masked-LM masking needs to know of a vocabulary, from a tokenizer or a token list.

Both maskers (`StaticMasker`, `DynamicMasker`) take one: the vocabulary size (random replacements), the
mask id, the ids that are never masked, and which pieces start a word (whole-word and n-gram masking).
`MaskingVocabulary.from_tokenizer` reads the ids from the tokenizer (`[CLS]` or `<s>`, `[MASK]` or
`<mask>`: whatever its vocabulary calls them); a plain token list is read with BERT's token names.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from kbert.constants import MASK, SPECIAL_TOKENS
from kbert.text.word_pieces import word_start_flags

# The tokenizer attributes whose ids are never masked; `mask_token_id` must be set.
SPECIAL_ID_ATTRIBUTES = ("pad_token_id", "unk_token_id", "cls_token_id", "sep_token_id", "mask_token_id")


class MissingMaskTokenError(ValueError):
    """The vocabulary has no `[MASK]` token, so masked-LM inputs cannot be made from it."""


def _missing_mask(size: int) -> MissingMaskTokenError:
    return MissingMaskTokenError(
        f"The vocabulary ({size} tokens) has no {MASK} token; masked-LM pretraining needs one. "
        "Add a [MASK] line to vocab.txt (BERT vocabularies have it at id 103)."
    )


def mask_token_id(vocabulary: Sequence[str]) -> int:
    """Returns the id of `[MASK]`, or raises `MissingMaskTokenError` naming the problem."""
    try:
        return list(vocabulary).index(MASK)
    except ValueError:
        raise _missing_mask(len(vocabulary)) from None


def special_token_ids(vocabulary: Sequence[str]) -> list[int]:
    """Ids of [PAD] [UNK] [CLS] [SEP] [MASK] that are in `vocabulary`: these are never masked."""
    index = {token: i for i, token in enumerate(vocabulary) if token in SPECIAL_TOKENS}
    return sorted(index.values())


def continuation_flags(vocabulary: Sequence[str]) -> np.ndarray:
    """A bool array over the vocabulary: True for pieces that continue a word (`##...` in WordPiece)."""
    return ~np.array(word_start_flags(vocabulary), dtype=bool)


@dataclass(frozen=True)
class MaskingVocabulary:
    """The vocabulary facts masked-LM masking uses.

    Args:
        size: int. Number of ids (random replacements are drawn from all of them).
        mask_id: int. The id that replaces a masked token.
        special_ids: frozenset[int]. Ids that are never masked (padding, unknown, cls, sep, mask).
        word_starts: tuple[bool, ...]. Per id: the piece starts a word (`kbert.text.word_pieces`).

    Example:
        >>> vocab = MaskingVocabulary.from_tokens(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "un", "##aff"])
        >>> vocab.mask_id, sorted(vocab.special_ids), vocab.word_starts[5:]
        (4, [0, 1, 2, 3, 4], (True, False))
    """

    size: int
    mask_id: int
    special_ids: frozenset[int]
    word_starts: tuple[bool, ...]

    @classmethod
    def from_tokens(cls, vocabulary: Sequence[str], convention: str | None = None) -> "MaskingVocabulary":
        """From the pieces in id order, with BERT's special-token names; `convention` as in `word_start_flags`.

        Raises:
            MissingMaskTokenError: no `[MASK]` in `vocabulary`.
        """
        vocabulary = list(vocabulary)
        return cls(len(vocabulary), mask_token_id(vocabulary), frozenset(special_token_ids(vocabulary)),
                   tuple(word_start_flags(vocabulary, convention)))

    @classmethod
    def from_tokenizer(cls, tokenizer) -> "MaskingVocabulary":
        """From a tokenizer: its `get_vocabulary()` and its `pad/unk/cls/sep/mask_token_id` attributes.

        Raises:
            MissingMaskTokenError: the tokenizer has no mask token.
        """
        vocabulary = list(tokenizer.get_vocabulary())
        mask_id = getattr(tokenizer, "mask_token_id", None)
        if mask_id is None:
            raise _missing_mask(len(vocabulary))
        special = {getattr(tokenizer, name, None) for name in SPECIAL_ID_ATTRIBUTES}
        return cls(len(vocabulary), int(mask_id), frozenset(int(i) for i in special if i is not None),
                   tuple(word_start_flags(vocabulary)))

    @classmethod
    def of(cls, vocabulary: "Sequence[str] | MaskingVocabulary") -> "MaskingVocabulary":
        """`vocabulary` itself when it is a `MaskingVocabulary`, else `from_tokens(vocabulary)`."""
        return vocabulary if isinstance(vocabulary, cls) else cls.from_tokens(vocabulary)
