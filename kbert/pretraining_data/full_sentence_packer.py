"""`FullSentencePacker`: RoBERTa's FULL-SENTENCES inputs, contiguous sentences packed up to the sequence length.

RoBERTa (Liu et al. 2019, section 4.2) packs "full sentences sampled contiguously from one or more
documents, such that the total length is at most 512 tokens. Inputs may cross document boundaries. When
we reach the end of one document, we begin sampling sentences from the next document and add an extra
separator token between documents", and drops next-sentence prediction. Here an input is
`[CLS] s1 s2 ... [SEP]` (one segment) with the separator (the tokenizer's sep id) between documents.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

Packed = tuple[list[int], list[bool]]  # token ids and word-start flags, `[CLS]` ... `[SEP]` included


class FullSentencePacker:
    """Packs documents of tokenized sentences into full-length single-segment inputs, streaming.

    Sentences are added whole, in order, while they fit in `sequence_length - 2` tokens (the `[CLS]` and
    the closing `[SEP]`); a document after the first of an input is preceded by a `[SEP]`. A sentence
    longer than a whole input is cut into full-length pieces. No randomness: the order of the documents
    given decides the inputs.

    Args:
        sequence_length: int. Length of a packed input, specials included (>= 3).
        cls_id: int. The tokenizer's cls id (`[CLS]`, `<s>`).
        sep_id: int. The tokenizer's sep id (`[SEP]`, `</s>`): closes an input and separates documents.

    Call arguments (`add`):
        document: Sequence of `(token_ids, word_starts)` sentences.

    Returns:
        `add` yields the inputs that the document completed; `finish` yields the last, partly filled one.
        Each is `(token_ids, word_starts)`; specials and separators start a word.

    Example:
        >>> packer = FullSentencePacker(sequence_length=8, cls_id=2, sep_id=3)
        >>> first = list(packer.add([([5, 6], [True, True]), ([7, 8, 9], [True] * 3)]))
        >>> second = list(packer.add([([10], [True]), ([11, 12], [True, False])]))
        >>> [ids for ids, _ in first + second + list(packer.finish())]
        [[2, 5, 6, 7, 8, 9, 3], [2, 10, 11, 12, 3]]
    """

    def __init__(self, sequence_length: int, cls_id: int, sep_id: int) -> None:
        if sequence_length < 3:
            raise ValueError(f"sequence_length must be >= 3 ([CLS] x [SEP]), got {sequence_length}.")
        self.room = sequence_length - 2
        self.cls_id, self.sep_id = cls_id, sep_id
        self.ids: list[int] = []
        self.starts: list[bool] = []

    def add(self, document: Sequence[tuple[Sequence[int], Sequence[bool]]]) -> Iterator[Packed]:
        """Adds one document's sentences; yields every input that fills up on the way."""
        separate = bool(self.ids)  # a document boundary inside the current input
        for sentence_ids, sentence_starts in document:
            ids, starts = list(sentence_ids), list(sentence_starts)
            if not ids:
                continue
            if self.ids and len(self.ids) + separate + len(ids) > self.room:
                yield self._flush()
            separate = separate and bool(self.ids)
            while len(ids) > self.room:  # longer than a whole input: full-length pieces of it
                yield self._pack(ids[: self.room], starts[: self.room])
                ids, starts = ids[self.room:], starts[self.room:]
            if separate:
                self.ids.append(self.sep_id)
                self.starts.append(True)
                separate = False
            self.ids.extend(ids)
            self.starts.extend(starts)

    def finish(self) -> Iterator[Packed]:
        """Yields the input being filled, if it holds anything, and starts afresh."""
        if self.ids:
            yield self._flush()

    def _flush(self) -> Packed:
        packed = self._pack(self.ids, self.starts)
        self.ids, self.starts = [], []
        return packed

    def _pack(self, ids: list[int], starts: list[bool]) -> Packed:
        return [self.cls_id, *ids, self.sep_id], [True, *starts, True]
