"""Sentence-pair instances for BERT pretraining, as in Google's `create_pretraining_data.py`.

Documents come in as lists of tokenized sentences and go out as packed `[CLS] A [SEP] B [SEP]`
instances with segment ids and a next-sentence (NSP) or sentence-order (SOP) label. Unlike Google's
script, which holds the whole corpus in memory, documents stream through a shuffle buffer: the random
"next" segment of NSP is drawn from the other documents in that buffer. The same buffers feed RoBERTa's
full-sentence inputs (`packing="full-sentences"`, `kbert.pretraining_data.full_sentence_packer`).
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

from kbert.constants import FULL_SENTENCES, OBJECTIVES, PACKINGS
from kbert.pretraining_data.full_sentence_packer import FullSentencePacker

IS_NEXT, NOT_NEXT = 0, 1  # NSP labels as in Google's; SOP: 0 = in order, 1 = swapped.

# A tokenized sentence: (token ids, per-token "a word starts here" flags), or just the ids.
Sentence = tuple[list[int], list[bool]]
Document = list[Sentence]


@dataclass(frozen=True)
class PretrainingInstance:
    """One packed, unmasked pretraining sequence.

    Attributes:
        token_ids: `[CLS] A [SEP] B [SEP]` (or `[CLS] A [SEP]` for objective "none"; full sentences:
            `[CLS] s1 s2 [SEP] s3 [SEP]`, a `[SEP]` between documents), unpadded.
        segment_ids: 0 for `[CLS] A [SEP]`, 1 for `B [SEP]` (full sentences: all 0).
        next_sentence_label: NSP: 0 = B follows A, 1 = B is from another document. SOP: 0 = A and B in
            order, 1 = swapped. Objective "none": 0.
        word_starts: per token, False where the token continues the previous token's segmenter word
            (Chinese whole-word masking); special tokens start their own word.
    """

    token_ids: list[int]
    segment_ids: list[int]
    next_sentence_label: int
    word_starts: list[bool]


def as_sentence(sentence: Sentence | Sequence[int]) -> Sentence:
    """A sentence as `(token_ids, word_starts)`; a bare id list gets a word start on every token."""
    if isinstance(sentence, tuple):
        return sentence
    ids = list(sentence)
    return ids, [True] * len(ids)


def _concat(sentences: Sequence[Sentence]) -> tuple[list[int], list[bool]]:
    ids: list[int] = []
    starts: list[bool] = []
    for sentence_ids, sentence_starts in sentences:
        ids.extend(sentence_ids)
        starts.extend(sentence_starts)
    return ids, starts


def truncate_pair(
    a: list, b: list, max_num_tokens: int, rng: random.Random, a_extra: list, b_extra: list
) -> None:
    """Truncates `a` and `b` in place to `max_num_tokens` in all, as Google's `truncate_seq_pair`.

    The longer of the two loses one token at a time, from the front or the back with probability 0.5
    (so the model does not learn that text is always cut at the end). `a_extra`/`b_extra` are parallel
    lists (word-start flags) cut the same way.
    """
    while len(a) + len(b) > max_num_tokens:
        longer, extra = (a, a_extra) if len(a) > len(b) else (b, b_extra)
        index = 0 if rng.random() < 0.5 else -1
        del longer[index]
        del extra[index]


def pack_pair(
    tokens_a: Sequence[int], tokens_b: Sequence[int], cls_id: int, sep_id: int
) -> tuple[list[int], list[int]]:
    """Packs `[CLS] A [SEP] B [SEP]` (no B: `[CLS] A [SEP]`) and its segment ids.

    Example:
        >>> pack_pair([5, 6], [7], cls_id=2, sep_id=3)
        ([2, 5, 6, 3, 7, 3], [0, 0, 0, 0, 1, 1])
    """
    token_ids = [cls_id, *tokens_a, sep_id]
    segment_ids = [0] * len(token_ids)
    if tokens_b:
        token_ids += [*tokens_b, sep_id]
        segment_ids += [1] * (len(tokens_b) + 1)
    return token_ids, segment_ids


def create_pretraining_instances(
    documents: Iterable[Sequence[Sentence | Sequence[int]]],
    *,
    sequence_length: int,
    cls_id: int,
    sep_id: int,
    objective: str = "nsp",
    packing: str = "segment-pair",
    short_seq_prob: float = 0.1,
    dupe_factor: int = 1,
    seed: int | None = None,
    document_buffer: int = 1000,
    instance_buffer: int = 10000,
) -> Iterator[PretrainingInstance]:
    """Turns tokenized documents into packed pretraining instances, streaming.

    Follows Google's `create_instances_from_document`: sentences are gathered into a chunk until it
    reaches a target length (`sequence_length - 3`, or with probability `short_seq_prob` a random length
    in [2, that]); A is the chunk's first 1..n-1 sentences. NSP: with probability 0.5, B is a span of
    another document and the chunk's unused sentences are put back; otherwise B is the rest of the chunk.
    SOP (ALBERT): B is the rest of the chunk, and A/B are swapped with probability 0.5. One difference
    from Google's: a chunk of a single sentence (a one-sentence document, or one long sentence) is cut
    at a random token into A and B when a true continuation is needed, where Google forces a random next
    (which tilts NSP labels toward "random" on short documents; here they stay 50/50). A sentence of one
    token alone gives no instance, and a corpus of one document gives only true continuations.
    "none": the whole chunk is A, with no B. The pair is truncated to fit and packed with `pack_pair`.
    `packing="full-sentences"` (RoBERTa's, objective "none" only) packs the documents, in their shuffled
    order, into `FullSentencePacker` inputs instead; each input is emitted `dupe_factor` times (to be
    masked differently), and `short_seq_prob` does not apply.

    Args:
        documents: an iterable of documents, each a sequence of sentences; a sentence is a list of token
            ids or a `(token_ids, word_starts)` tuple. Empty documents and sentences are skipped.
        sequence_length: int. Length of a packed instance, specials included (>= 5).
        cls_id: int. Id of `[CLS]`.
        sep_id: int. Id of `[SEP]`.
        objective: str. "nsp", "sop" or "none".
        packing: str. "segment-pair" (BERT's) or "full-sentences" (RoBERTa's; objective "none").
        short_seq_prob: float. Probability of a shorter target length.
        dupe_factor: int. How many times each document is turned into instances (with different chunks).
        seed: int | None. Seed of the random generator.
        document_buffer: int. Documents held at once: the shuffle window and the pool of random-next
            documents.
        instance_buffer: int. Instances shuffled together before they are yielded.

    Returns:
        An iterator of `PretrainingInstance`.

    Example:
        >>> docs = [[[5, 6], [7, 8]], [[9, 10], [11]]]
        >>> instances = list(create_pretraining_instances(docs, sequence_length=16, cls_id=2, sep_id=3,
        ...                                               objective="none", seed=0))
        >>> sorted(i.token_ids for i in instances)
        [[2, 5, 6, 7, 8, 3], [2, 9, 10, 11, 3]]
    """
    if objective not in OBJECTIVES:
        raise ValueError(f"objective must be one of {OBJECTIVES}, got {objective!r}.")
    check_packing(packing, objective)
    if sequence_length < 5:
        raise ValueError(f"sequence_length must be >= 5 ([CLS] a [SEP] b [SEP]), got {sequence_length}.")
    if dupe_factor < 1 or document_buffer < 1 or instance_buffer < 1:
        raise ValueError("dupe_factor, document_buffer and instance_buffer must be >= 1.")
    rng = random.Random(seed)
    pool: list[Document] = []
    shuffled: list[PretrainingInstance] = []
    packer = FullSentencePacker(sequence_length, cls_id, sep_id) if packing == FULL_SENTENCES else None

    def emit(instances: Iterable[PretrainingInstance]) -> Iterator[PretrainingInstance]:
        for instance in instances:
            if len(shuffled) < instance_buffer:
                shuffled.append(instance)
                continue
            index = rng.randrange(instance_buffer)
            yield shuffled[index]
            shuffled[index] = instance

    def process(index: int) -> Iterator[PretrainingInstance]:
        document = pool[index]
        pool[index] = pool[-1]
        pool.pop()
        if packer is not None:
            yield from emit(_full_sentences(packer.add(document), dupe_factor))
            return
        for _ in range(dupe_factor):
            yield from emit(_from_document(document, pool, sequence_length, cls_id, sep_id, objective,
                                           short_seq_prob, rng))

    for raw_document in documents:
        document = [s for s in (as_sentence(x) for x in raw_document) if s[0]]
        if not document:
            continue
        pool.append(document)
        if len(pool) > document_buffer:
            yield from process(rng.randrange(len(pool)))
    while pool:
        yield from process(rng.randrange(len(pool)))
    if packer is not None:
        yield from emit(_full_sentences(packer.finish(), dupe_factor))
    rng.shuffle(shuffled)
    yield from shuffled


def check_packing(packing: str, objective: str) -> None:
    """Raises a ValueError for an unknown packing, or full sentences with a sentence objective."""
    if packing not in PACKINGS:
        raise ValueError(f"packing must be one of {PACKINGS}, got {packing!r}.")
    if packing == FULL_SENTENCES and objective != "none":
        raise ValueError(f"packing {FULL_SENTENCES!r} packs one segment of contiguous sentences: it has no "
                         f"sentence pair for objective {objective!r}; use objective 'none' (RoBERTa's).")


def _full_sentences(packed: Iterable[tuple[list[int], list[bool]]], copies: int) -> Iterator[PretrainingInstance]:
    """Full-sentence inputs as instances (one segment, label 0), each `copies` times."""
    for token_ids, word_starts in packed:
        instance = PretrainingInstance(token_ids, [0] * len(token_ids), 0, word_starts)
        yield from [instance] * copies


def _from_document(
    document: Document,
    others: list[Document],
    sequence_length: int,
    cls_id: int,
    sep_id: int,
    objective: str,
    short_seq_prob: float,
    rng: random.Random,
) -> Iterator[PretrainingInstance]:
    """Google's `create_instances_from_document` over one document; `others` feed random next spans."""
    max_num_tokens = sequence_length - (2 if objective == "none" else 3)
    target_length = max_num_tokens
    if rng.random() < short_seq_prob:
        target_length = rng.randint(2, max_num_tokens)
    chunk: list[Sentence] = []
    chunk_length = 0
    i = 0
    while i < len(document):
        chunk.append(document[i])
        chunk_length += len(document[i][0])
        if i == len(document) - 1 or chunk_length >= target_length:
            instance, unused = _pair_from_chunk(chunk, others, target_length, max_num_tokens, cls_id, sep_id,
                                                objective, rng)
            i -= unused
            if instance is not None:
                yield instance
            chunk, chunk_length = [], 0
        i += 1


def _pair_from_chunk(chunk, others, target_length, max_num_tokens, cls_id, sep_id, objective, rng):
    """Builds one instance from a chunk; returns it (or None) and how many sentences go back unused."""
    if objective == "none":
        a_ids, a_starts = _concat(chunk)
        b_ids, b_starts, label, unused = [], [], 0, 0
    elif objective == "nsp" and others and rng.random() < 0.5:
        a_end = rng.randint(1, len(chunk) - 1) if len(chunk) >= 2 else 1
        a_ids, a_starts = _concat(chunk[:a_end])
        label, unused = NOT_NEXT, len(chunk) - a_end
        other = others[rng.randrange(len(others))]
        b_ids, b_starts = [], []
        for ids, starts in other[rng.randrange(len(other)):]:
            b_ids.extend(ids)
            b_starts.extend(starts)
            if len(b_ids) >= target_length - len(a_ids):
                break
    else:
        label, unused = IS_NEXT, 0
        if len(chunk) >= 2:
            a_end = rng.randint(1, len(chunk) - 1)
            a_ids, a_starts = _concat(chunk[:a_end])
            b_ids, b_starts = _concat(chunk[a_end:])
        else:  # one sentence: its two halves, cut at a random token, are the true continuation
            ids, starts = chunk[0]
            if len(ids) < 2:
                return None, 0
            cut = rng.randint(1, len(ids) - 1)
            a_ids, a_starts, b_ids, b_starts = ids[:cut], starts[:cut], ids[cut:], starts[cut:]
        if objective == "sop" and rng.random() < 0.5:
            label = NOT_NEXT
            a_ids, b_ids, a_starts, b_starts = b_ids, a_ids, b_starts, a_starts
    truncate_pair(a_ids, b_ids, max_num_tokens, rng, a_starts, b_starts)
    if not a_ids or (objective != "none" and not b_ids):
        return None, unused
    token_ids, segment_ids = pack_pair(a_ids, b_ids, cls_id, sep_id)
    word_starts = [True, *a_starts, True] + ([*b_starts, True] if b_ids else [])
    return PretrainingInstance(token_ids, segment_ids, label, word_starts), unused
