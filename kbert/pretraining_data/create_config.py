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
LANGUAGES = ("en", "zh")  # zh: words from jieba for whole-word masking


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

    input: Sequence[str] = dataclasses.field(default=(), metadata={
        "help": "glob(s) of UTF-8 text files (quote them), or tfds:NAME for a local tfds dataset"})
    vocab: str = dataclasses.field(default="", metadata={"help": "WordPiece vocab.txt; must contain [MASK]"})
    out: str = dataclasses.field(default="", metadata={"help": "output directory for the TFRecord shards"})
    sequence_length: int = dataclasses.field(default=128, metadata={
        "help": "length of a packed instance in tokens"})
    max_predictions_per_seq: int | None = dataclasses.field(default=None, metadata={
        "help": "masked positions per instance (default: round(sequence_length * masked_lm_prob))"})
    masked_lm_prob: float = dataclasses.field(default=0.15, metadata={"help": "fraction of tokens to predict"})
    short_seq_prob: float = dataclasses.field(default=0.1, metadata={"help": "probability of a shorter instance"})
    dupe_factor: int = dataclasses.field(default=10, metadata={
        "help": "instances made from each document, with different chunks and masks (Google: 10)"})
    objective: str = dataclasses.field(default="nsp", metadata={
        "help": "nsp: next sentence (BERT); sop: sentence order (ALBERT); none: MLM only", "choices": OBJECTIVES})
    whole_word_masking: bool = dataclasses.field(default=False, metadata={
        "help": "mask all pieces of a word together (zh: words from jieba)"})
    language: str = dataclasses.field(default="en", metadata={
        "help": "zh: segment words with jieba for whole-word masking", "choices": LANGUAGES})
    lowercase: bool = dataclasses.field(default=True, metadata={
        "help": "uncased tokenization (--no-lowercase for cased vocabularies)"})
    layout: str = dataclasses.field(default="sentences", metadata={
        "help": "sentences: one sentence a line, blank line between documents; documents: one document a "
                "line; paragraphs: a file is a document of blank-line separated paragraphs (books)",
        "choices": LAYOUTS})
    masking: str = dataclasses.field(default="static", metadata={
        "help": "static: masks written into the records; dynamic: unmasked records, masked afresh every "
                "epoch when read", "choices": MASKINGS})
    num_shards: int = dataclasses.field(default=1, metadata={
        "help": "output shards; records are shuffled over the whole corpus, then spread over them"})
    seed: int = dataclasses.field(default=12345, metadata={
        "help": "seed of instances, static masks and the order of the records"})
    document_buffer: int = dataclasses.field(default=1000, metadata={
        "help": "documents held at once (shuffle window and pool of random next sentences)"})
    tfds_split: str = dataclasses.field(default="train", metadata={"help": "split of a tfds input"})
    tfds_text_key: str = dataclasses.field(default="text", metadata={"help": "text feature of a tfds input"})
    encoding_errors: str = dataclasses.field(default=DEFAULT_ENCODING_ERRORS, metadata={
        "help": "bytes that are not UTF-8: replace (U+FFFD, which BERT's cleaning deletes), ignore (drop them, "
                "as Google's script does) or strict (stop); a warning names each file with repaired lines and "
                "how many", "choices": ENCODING_ERRORS})

    @property
    def predictions(self) -> int:
        """`max_predictions_per_seq`, or its default `round(sequence_length * masked_lm_prob)`."""
        return self.max_predictions_per_seq or max(1, int(round(self.sequence_length * self.masked_lm_prob)))

    def validate(self) -> None:
        """Raises a ValueError naming the first setting out of range."""
        choices = {"objective": OBJECTIVES, "layout": LAYOUTS, "masking": MASKINGS,
                   "language": LANGUAGES, "encoding_errors": ENCODING_ERRORS}
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
