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

    def _init_string_layer(self, **kwargs) -> None:
        """The Keras layer a tokenizer also is (the next class in its bases): int32 ids out, nothing to train,
        strings in as they come (Keras would convert Python strings and lists to tensors of its own dtype)."""
        kwargs.setdefault("dtype", "int32")
        kwargs.setdefault("trainable", False)
        super().__init__(**kwargs)
        self._convert_input_args = False
        self._allow_non_tensor_positional_args = True

    def set_vocabulary(self, tokens: list[str]) -> None:
        """Keeps the tokens; a token listed twice keeps its first id."""
        to_id: dict[str, int] = {}
        for i, token in enumerate(tokens):
            to_id.setdefault(str(token), i)
        # Set past a Keras layer's attribute tracking, which would wrap each of 50k strings (about a second).
        object.__setattr__(self, "vocabulary", [str(t) for t in tokens])
        object.__setattr__(self, "_token_to_id", to_id)

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
