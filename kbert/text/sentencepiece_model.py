"""A SentencePiece model file (`spiece.model`, a serialized `ModelProto`): its pieces, its normaliser's
character map, and the copy of it that `SentencePieceTokenizer`'s graph op runs.

The file is read at the protobuf wire level, only the fields used here, and a rewritten model keeps every
other field byte for byte. Why not `sentencepiece.sentencepiece_model_pb2`: that module is generated for a
newer protobuf runtime than the one TensorFlow pins, and does not import next to it.
"""

from __future__ import annotations

import dataclasses

import numpy as np

# Field numbers of sentencepiece_model.proto.
PIECES, TRAINER_SPEC, NORMALIZER_SPEC = 1, 2, 3  # ModelProto
PIECE_TEXT, PIECE_SCORE, PIECE_TYPE = 1, 2, 3  # ModelProto.SentencePiece
MODEL_TYPE, BYTE_FALLBACK = 3, 35  # TrainerSpec
NORMALIZER_NAME, CHARSMAP, ADD_DUMMY_PREFIX, REMOVE_EXTRA_WHITESPACES, ESCAPE_WHITESPACES = 1, 2, 3, 4, 5
# SentencePiece.Type and TrainerSpec.ModelType values.
NORMAL, UNKNOWN, CONTROL, USER_DEFINED, UNUSED, BYTE = 1, 2, 3, 4, 5, 6
UNIGRAM = 1
META = "\u2581"  # "▁": a piece that starts with it starts a word
SCORE_QUANTUM = 2 ** 15  # graph scores are multiples of its inverse (see `SentencePieceModel.graph_proto`)
VARINT, FIXED64, LENGTH, FIXED32 = 0, 1, 2, 5  # wire types


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = data[pos]
        value |= (byte & 0x7F) << shift
        pos += 1
        if byte < 0x80:
            return value, pos
        shift += 7


def _encode_varint(value: int) -> bytes:
    value &= (1 << 64) - 1  # negative int32/int64 values are ten bytes, as protobuf writes them
    out = bytearray()
    while value >= 0x80:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    return bytes(out + bytes([value]))


def fields(data: bytes) -> list[tuple[int, int, int | bytes]]:
    """The (field number, wire type, value) of each field of a serialized message, in file order: an int
    for varints, the raw bytes otherwise."""
    out, pos = [], 0
    try:
        while pos < len(data):
            key, pos = _varint(data, pos)
            number, wire = key >> 3, key & 7
            if wire == VARINT:
                value, pos = _varint(data, pos)
            elif wire == LENGTH:
                size, pos = _varint(data, pos)
                value, pos = data[pos:pos + size], pos + size
            elif wire in (FIXED32, FIXED64):
                size = 4 if wire == FIXED32 else 8
                value, pos = data[pos:pos + size], pos + size
            else:
                raise ValueError(f"wire type {wire}")
            if pos > len(data):
                raise ValueError("truncated")
            out.append((number, wire, value))
    except (IndexError, ValueError) as err:
        raise ValueError(f"not a SentencePiece model (protobuf parse error: {err})") from None
    return out


def encode(message: list[tuple[int, int, int | bytes]]) -> bytes:
    """The inverse of `fields`."""
    out = bytearray()
    for number, wire, value in message:
        out += _encode_varint(number << 3 | wire)
        if wire == VARINT:
            out += _encode_varint(value)
        elif wire == LENGTH:
            out += _encode_varint(len(value)) + value
        else:
            out += value
    return bytes(out)


@dataclasses.dataclass
class SentencePieceModel:
    """What kbert reads of a SentencePiece model.

    Args:
        proto: bytes. The serialized `ModelProto`.

    Example:
    >>> proto = encode([(PIECES, LENGTH, encode([(PIECE_TEXT, LENGTH, b"<unk>"), (PIECE_TYPE, VARINT, UNKNOWN)])),
    ...                 (PIECES, LENGTH, encode([(PIECE_TEXT, LENGTH, "▁a".encode())]))])
    >>> model = SentencePieceModel.from_bytes(proto)
    >>> model.pieces, model.types, model.model_type
    (['<unk>', '▁a'], [2, 1], 1)
    """

    proto: bytes
    pieces: list[str] = dataclasses.field(default_factory=list)
    scores: list[float] = dataclasses.field(default_factory=list)
    types: list[int] = dataclasses.field(default_factory=list)
    model_type: int = UNIGRAM
    charsmap: bytes = b""

    @classmethod
    def from_bytes(cls, proto: bytes) -> "SentencePieceModel":
        model = cls(proto=bytes(proto))
        for number, wire, value in fields(model.proto):
            if number == PIECES and wire == LENGTH:
                piece = {n: v for n, _, v in fields(value)}
                model.pieces.append(piece.get(PIECE_TEXT, b"").decode("utf-8"))
                model.scores.append(float(np.frombuffer(piece.get(PIECE_SCORE, b"\0" * 4), "<f4")[0]))
                model.types.append(int(piece.get(PIECE_TYPE, NORMAL)))
            elif number == TRAINER_SPEC and wire == LENGTH:
                model.model_type = int({n: v for n, _, v in fields(value)}.get(MODEL_TYPE, UNIGRAM))
            elif number == NORMALIZER_SPEC and wire == LENGTH:
                model.charsmap = bytes({n: v for n, _, v in fields(value)}.get(CHARSMAP, b""))
        if not model.pieces:
            raise ValueError("not a SentencePiece model: it holds no pieces")
        return model

    def with_scores(self, scores: list[float]) -> "SentencePieceModel":
        """The same model with other piece scores (e.g. the ones an HF `tokenizer.json` holds)."""
        if len(scores) != len(self.pieces):
            raise ValueError(f"{len(scores)} scores for {len(self.pieces)} pieces")
        return SentencePieceModel.from_bytes(self._rewrite_pieces(scores, self.types))

    def _rewrite_pieces(self, scores: list[float], types: list[int]) -> bytes:
        """The model's message with each piece's score and type replaced."""
        out, index = [], 0
        for number, wire, value in fields(self.proto):
            if number == PIECES and wire == LENGTH:
                kept = [f for f in fields(value) if f[0] not in (PIECE_SCORE, PIECE_TYPE)]
                value = encode(kept + [(PIECE_SCORE, FIXED32, np.float32(scores[index]).tobytes()),
                                       (PIECE_TYPE, VARINT, types[index])])
                index += 1
            out.append((number, wire, value))
        return encode(out)

    def graph_proto(self, charsmap: bytes = b"") -> bytes:
        """The model the graph op runs, given text that kbert has already normalised (or that `charsmap`
        normalises: `kbert.text.TFLiteSentencePieceTokenizer`'s).

        Its normaliser keeps only `charsmap` (none by default) and the white-space handling (trim, collapse
        runs of spaces, "▁" before each word); pieces with a "▁" after their first character become unused, as HF, which splits words at
        every "▁" before its Unigram model, never forms them; byte fallback is off (HF's ALBERT has none,
        an unknown character is `<unk>`). Scores are rounded to multiples of 2^-15 (by at most 1.6e-5): so
        SentencePiece's float32 sums along a word are exact, as HF's float64 ones are, and segmentations that
        tie (the same pieces in another order, as ">" ">>" and ">>" ">") are broken as HF breaks them, by
        keeping the first found, instead of by rounding.
        """
        scores = np.round(np.array(self.scores, np.float64) * SCORE_QUANTUM) / SCORE_QUANTUM
        types = [UNUSED if META in p[1:] and kind == NORMAL else kind for p, kind in zip(self.pieces, self.types)]
        normalizer = [(NORMALIZER_NAME, LENGTH, b"kbert" if charsmap else b"identity"),
                      *([(CHARSMAP, LENGTH, charsmap)] if charsmap else []), (ADD_DUMMY_PREFIX, VARINT, 1),
                      (REMOVE_EXTRA_WHITESPACES, VARINT, 1), (ESCAPE_WHITESPACES, VARINT, 1)]
        out = []
        for number, wire, value in fields(self._rewrite_pieces(scores.tolist(), types)):
            if number == TRAINER_SPEC and wire == LENGTH:
                value = encode([f for f in fields(value) if f[0] != BYTE_FALLBACK])
            elif number == NORMALIZER_SPEC:
                continue
            out.append((number, wire, value))
        return encode(out + [(NORMALIZER_SPEC, LENGTH, encode(normalizer))])


def charsmap_characters(charsmap: bytes) -> dict[int, str]:
    """The rules of a SentencePiece `precompiled_charsmap` for single characters: code point -> replacement.

    The map is a double-array trie (darts-clone's layout: a little-endian uint32 with the trie's size in
    bytes, the trie's 32-bit units, then the replacements, each ended by a NUL byte). Its keys are found by
    walking every child of every node, one byte (trie level) at a time, up to one whole UTF-8 character;
    the longer keys (sequences such as Hangul jamo to a syllable) are not read.

    Example:
    >>> charsmap_characters(b"")
    {}
    """
    if not charsmap:
        return {}
    size = int.from_bytes(charsmap[:4], "little")
    units = np.frombuffer(charsmap[4:4 + size], "<u4").astype(np.int64)
    replacements = charsmap[4 + size:]

    def offset(unit):
        return (unit >> 10) << ((unit & (1 << 9)) >> 6)

    labels = np.arange(1, 256, dtype=np.int64)
    entries: dict[int, str] = {}
    positions, keys = np.array([offset(units[0])]), np.zeros([1, 0], np.int64)  # trie nodes, their keys
    for depth in range(1, 5):
        child = positions[:, np.newaxis] ^ labels  # (nodes, 255): where each labelled child would be
        inside = child < len(units)
        unit = units[np.where(inside, child, 0)]
        rows, cols = np.nonzero(inside & ((unit & ((1 << 31) | 0xFF)) == labels))
        unit, positions = unit[rows, cols], child[rows, cols] ^ offset(unit[rows, cols])
        keys = np.concatenate([keys[rows], labels[cols, np.newaxis]], 1)
        lead = keys[:, 0]
        whole = depth == np.where(lead < 0x80, 1, np.where(lead >= 0xF0, 4, np.where(lead >= 0xE0, 3, 2)))
        for key, position in zip(keys[whole & ((unit >> 8) & 1 == 1)], positions[whole & ((unit >> 8) & 1 == 1)]):
            start = int(units[position] & ((1 << 31) - 1))
            entries[ord(bytes(key.tolist()).decode("utf-8"))] = replacements[start:replacements.index(b"\0", start)
                                                                              ].decode("utf-8")
        positions, keys = positions[~whole], keys[~whole]
    return entries
