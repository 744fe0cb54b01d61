"""`CreatePretrainingDataConfig`: the settings of `create_pretraining_data`, in a module without TensorFlow.

Its fields are `kbert create-pretraining-data`'s flags, so the command's `--help` reads them without
loading TensorFlow. `kbert.pretraining_data.create` re-exports it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from kbert.constants import OBJECTIVES
from kbert.pretraining_data.corpus import LAYOUTS
from kbert.text.text_files import DEFAULT_ENCODING_ERRORS, ENCODING_ERRORS

MASKINGS = ("static", "dynamic")


@dataclasses.dataclass
class CreatePretrainingDataConfig:
    """Every setting of `create_pretraining_data`; each is a `kbert create-pretraining-data` flag.

    Names are kbert's own, the same as `PretrainConfig`'s; Google's `create_pretraining_data.py` calls
    `input` input_file, `out` output_file and `sequence_length` max_seq_length.

    Attributes:
        input: Sequence[str]. Globs of UTF-8 text files, or one "tfds:NAME[:SPLIT]".
        vocab: str. WordPiece vocab.txt; must contain [MASK].
        out: str. Output directory of the shards.
        sequence_length: int. Length of a packed instance.
        max_predictions_per_seq: int | None. Default: round(sequence_length * masked_lm_prob).
        masked_lm_prob: float. Fraction of tokens to predict.
        short_seq_prob: float. Probability of a shorter instance.
        dupe_factor: int. Instances made from each document, with different chunks and masks.
        objective: str. "nsp", "sop" or "none".
        whole_word_masking: bool. Mask all pieces of a word together (zh: words from jieba).
        language: str. "en", or "zh" to segment words with jieba.
        lowercase: bool. Uncased tokenization.
        layout: str. "sentences", "documents" or "paragraphs" (see `TextCorpus`).
        masking: str. "static": masks in the records; "dynamic": masked afresh each epoch when read.
        num_shards: int. Output shards.
        seed: int. Seed of instances (static masks: seed + 1; the order of the written records: seed + 2).
        document_buffer: int. Documents held at once (shuffle window and random-next pool).
        tfds_split: str. Split of a tfds input.
        tfds_text_key: str. Text feature of a tfds input.
        encoding_errors: str. "strict", "replace" or "ignore" for bytes that are not UTF-8.
    """

    input: Sequence[str] = ()
    vocab: str = ""
    out: str = ""
    sequence_length: int = 128
    max_predictions_per_seq: int | None = None
    masked_lm_prob: float = 0.15
    short_seq_prob: float = 0.1
    dupe_factor: int = 10
    objective: str = "nsp"
    whole_word_masking: bool = False
    language: str = "en"
    lowercase: bool = True
    layout: str = "sentences"
    masking: str = "static"
    num_shards: int = 1
    seed: int = 12345
    document_buffer: int = 1000
    tfds_split: str = "train"
    tfds_text_key: str = "text"
    encoding_errors: str = DEFAULT_ENCODING_ERRORS

    @property
    def predictions(self) -> int:
        """`max_predictions_per_seq`, or its default `round(sequence_length * masked_lm_prob)`."""
        return self.max_predictions_per_seq or max(1, int(round(self.sequence_length * self.masked_lm_prob)))

    def validate(self) -> None:
        """Raises a ValueError naming the first setting out of range."""
        choices = {"objective": OBJECTIVES, "layout": LAYOUTS, "masking": MASKINGS,
                   "language": ("en", "zh"), "encoding_errors": ENCODING_ERRORS}
        for name, allowed in choices.items():
            if getattr(self, name) not in allowed:
                raise ValueError(f"{name} must be one of {allowed}, got {getattr(self, name)!r}.")
        if not self.input:
            raise ValueError("input is required (text file globs or tfds:NAME).")
        if self.sequence_length < 5:
            raise ValueError(f"sequence_length must be >= 5, got {self.sequence_length}.")
        if self.num_shards < 1 or self.dupe_factor < 1:
            raise ValueError("num_shards and dupe_factor must be >= 1.")

    def settings(self, vocab_size: int) -> dict:
        """The settings recorded in `pretraining_data.json`."""
        recorded = dataclasses.asdict(self)
        for name in ("vocab", "out", "num_shards", "document_buffer", "tfds_split", "tfds_text_key"):
            recorded.pop(name)
        recorded.update(max_predictions_per_seq=self.predictions, vocab_size=vocab_size,
                        input=list(recorded["input"]))
        return recorded
