"""Shared inputs for the static and dynamic masking tests: a vocabulary with `##` pieces and sequences."""

import random

SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
VOCAB = SPECIALS + [f"w{i}" for i in range(95)] + [f"##p{i}" for i in range(20)]
PAD, UNK, CLS, SEP, MASK = range(5)
WORDS = range(5, 100)
PIECES = range(100, 120)


def sequence(rng: random.Random, length: int, pieces: bool = False) -> list[int]:
    """`[CLS] ... [SEP] ... [SEP]` of `length` tokens, with an [UNK] in it and, optionally, `##` words."""
    body = []
    while len(body) < length - 3:
        body.append(rng.choice(WORDS))
        if pieces:
            body.extend(rng.choice(PIECES) for _ in range(rng.choice([0, 0, 1, 2])))
    body = body[: length - 3]
    body[len(body) // 3] = UNK
    half = len(body) // 2
    return [CLS, *body[:half], SEP, *body[half:], SEP]


def word_spans(token_ids, word_starts=None):
    """Positions of each whole word (a non-`##` token followed by its `##` pieces / False starts)."""
    spans = []
    for i, token in enumerate(token_ids):
        if token in (PAD, UNK, CLS, SEP, MASK):
            continue
        continues = token >= PIECES.start or (word_starts is not None and not word_starts[i])
        if continues and spans and spans[-1][-1] == i - 1:
            spans[-1].append(i)
        else:
            spans.append([i])
    return spans
