"""`TokenVocabulary`: the vocabulary look-ups that kbert's tokenizers share."""

from __future__ import annotations


class TokenVocabulary:
    """Look-ups on `self.vocabulary` (the tokens in id order), for a tokenizer layer to inherit.

    Example:
    >>> class Tokens(TokenVocabulary):
    ...     def __init__(self, tokens):
    ...         self.set_vocabulary(tokens)
    >>> tokens = Tokens(["[PAD]", "the", "cat"])
    >>> tokens.vocabulary_size(), tokens.token_to_id("cat"), tokens.id_to_token(1)
    (3, 2, 'the')
    """

    vocabulary: list[str]

    def set_vocabulary(self, tokens: list[str]) -> None:
        """Keeps the tokens; a token listed twice keeps its first id."""
        self.vocabulary = [str(t) for t in tokens]
        self._token_to_id: dict[str, int] = {}
        for i, token in enumerate(self.vocabulary):
            self._token_to_id.setdefault(token, i)

    def vocabulary_size(self) -> int:
        return len(self.vocabulary)

    def get_vocabulary(self) -> list[str]:
        return list(self.vocabulary)

    def token_to_id(self, token: str) -> int:
        if token not in self._token_to_id:
            raise KeyError(f"token {token!r} is not in the vocabulary")
        return self._token_to_id[token]

    def id_to_token(self, id: int) -> str:
        if not 0 <= int(id) < len(self.vocabulary):
            raise IndexError(f"id {id} is outside the vocabulary (size {len(self.vocabulary)})")
        return self.vocabulary[int(id)]
