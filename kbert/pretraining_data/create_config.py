"""`CreatePretrainingDataConfig`: the settings of `create_pretraining_data`, in a module without TensorFlow.

Its fields are `kbert create-pretraining-data`'s flags, so the command's `--help` reads them without
loading TensorFlow. `kbert.pretraining_data.create` re-exports it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from kbert.constants import OBJECTIVES, PACKINGS
from kbert.pretraining_data.corpus import LAYOUTS
from kbert.pretraining_data.instances import PretrainingInstance, check_packing, create_pretraining_instances
from kbert.pretraining_data.model_defaults import (CORPUS_LAYOUTS, MODEL_DEFAULTS, MODEL_TYPE_HELP, MODEL_TYPES,
                                                   model_defaults, resolve_layout)
from kbert.text.text_files import DEFAULT_ENCODING_ERRORS, ENCODING_ERRORS

MASKINGS = ("static", "dynamic")
LANGUAGES = ("en", "zh")  # zh: words from jieba for whole-word masking


@dataclasses.dataclass
class CreatePretrainingDataConfig:
    """Every setting of `create_pretraining_data`; each is a `kbert create-pretraining-data` flag.

    Names are kbert's own, the same as `PretrainConfig`'s; Google's `create_pretraining_data.py` calls
    `input` input_file, `out` output_file and `sequence_length` max_seq_length. `objective`, `packing`,
    `ngram`, `whole_word_masking` and `masking` left at None take `model_type`'s defaults
    (`kbert.pretraining_data.model_defaults`) when the config is made.

    Attributes:
        input: Sequence[str]. Globs of UTF-8 text files, or one "tfds:NAME[:SPLIT]".
        vocab: str. What `kbert.load_tokenizer` reads: a vocab.txt, or a directory of tokenizer files; its
            vocabulary must have a mask token.
        out: str. Output directory of the shards.
        model_type: str. "bert", "albert" or "roberta": the defaults of objective, packing, ngram,
            whole_word_masking and masking.
        sequence_length: int. Length of a packed instance.
        max_predictions_per_seq: int | None. Default: round(sequence_length * masked_lm_prob).
        masked_lm_prob: float. Fraction of tokens to predict.
        short_seq_prob: float. Probability of a shorter instance.
        dupe_factor: int. Instances made from each document, with different chunks and masks.
        objective: str. "nsp", "sop" or "none".
        packing: str. "segment-pair" (BERT's `[CLS] A [SEP] B [SEP]`) or "full-sentences" (RoBERTa's).
        ngram: int. Mask spans of up to this many words (tokens without whole-word masking), p(n) ~ 1/n.
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
    vocab: str = dataclasses.field(default="", metadata={
        "help": "vocab.txt, or a directory of tokenizer files (what kbert.load_tokenizer reads); its vocabulary "
                "needs a mask token"})
    out: str = dataclasses.field(default="", metadata={"help": "output directory for the TFRecord shards"})
    model_type: str = dataclasses.field(default="bert", metadata={"help": MODEL_TYPE_HELP, "choices": MODEL_TYPES})
    sequence_length: int = dataclasses.field(default=128, metadata={
        "help": "length of a packed instance in tokens"})
    max_predictions_per_seq: int | None = dataclasses.field(default=None, metadata={
        "help": "masked positions per instance (default: round(sequence_length * masked_lm_prob))"})
    masked_lm_prob: float = dataclasses.field(default=0.15, metadata={"help": "fraction of tokens to predict"})
    short_seq_prob: float = dataclasses.field(default=0.1, metadata={"help": "probability of a shorter instance"})
    dupe_factor: int = dataclasses.field(default=10, metadata={
        "help": "instances made from each document, with different chunks and masks (Google: 10)"})
    objective: str | None = dataclasses.field(default=None, metadata={
        "help": "nsp: next sentence (BERT); sop: sentence order (ALBERT); none: MLM only (default: from "
                "--model-type; none with --packing full-sentences)", "choices": OBJECTIVES})
    packing: str | None = dataclasses.field(default=None, metadata={
        "help": "segment-pair: [CLS] A [SEP] B [SEP] for NSP/SOP (BERT); full-sentences: contiguous sentences "
                "up to the sequence length, across documents with a [SEP] between them, one segment, objective "
                "none (RoBERTa) (default: from --model-type)", "choices": PACKINGS})
    ngram: int | None = dataclasses.field(default=None, metadata={
        "help": "mask spans of 1..N consecutive words (tokens without --whole-word-masking), p(n) ~ 1/n as in "
                "ALBERT; 1: BERT's masking (default: from --model-type: 3 for albert, else 1)"})
    whole_word_masking: bool | None = dataclasses.field(default=None, metadata={
        "help": "mask all pieces of a word together (zh: words from jieba) (default: from --model-type: on for "
                "albert)"})
    language: str = dataclasses.field(default="en", metadata={
        "help": "zh: segment words with jieba for whole-word masking", "choices": LANGUAGES})
    lowercase: bool = dataclasses.field(default=True, metadata={
        "help": "uncased tokenization (--no-lowercase for cased vocabularies)"})
    layout: str = dataclasses.field(default="sentences", metadata={
        "help": "sentences: one sentence a line, blank line between documents; documents: one document a "
                "line; paragraphs: a file is a document of blank-line separated paragraphs (books); "
                "full-sentences: sentences, packed as RoBERTa's FULL-SENTENCES (--packing full-sentences)",
        "choices": CORPUS_LAYOUTS})
    masking: str | None = dataclasses.field(default=None, metadata={
        "help": "static: masks written into the records; dynamic: unmasked records, masked afresh every "
                "epoch when read (default: from --model-type: dynamic for roberta, else static)",
        "choices": MASKINGS})
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

    def __post_init__(self) -> None:
        self.layout, self.packing = resolve_layout(self.layout, self.packing)
        given = {name: getattr(self, name) for name in MODEL_DEFAULTS["bert"]}
        for name, value in model_defaults(self.model_type, given).items():
            setattr(self, name, value)

    @property
    def predictions(self) -> int:
        """`max_predictions_per_seq`, or its default `round(sequence_length * masked_lm_prob)`."""
        return self.max_predictions_per_seq or max(1, int(round(self.sequence_length * self.masked_lm_prob)))

    def validate(self) -> None:
        """Raises a ValueError naming the first setting out of range."""
        choices = {"objective": OBJECTIVES, "layout": LAYOUTS, "masking": MASKINGS, "packing": PACKINGS,
                   "language": LANGUAGES, "encoding_errors": ENCODING_ERRORS, "model_type": MODEL_TYPES}
        for name, allowed in choices.items():
            if getattr(self, name) not in allowed:
                raise ValueError(f"{name} must be one of {allowed}, got {getattr(self, name)!r}.")
        if not self.input:
            raise ValueError("input is required (text file globs or tfds:NAME).")
        if self.sequence_length < 5:
            raise ValueError(f"sequence_length must be >= 5, got {self.sequence_length}.")
        if self.num_shards < 1 or self.dupe_factor < 1:
            raise ValueError("num_shards and dupe_factor must be >= 1.")
        if self.ngram < 1:
            raise ValueError(f"ngram must be >= 1, got {self.ngram}.")
        check_packing(self.packing, self.objective)

    def instances(self, documents: Iterable, cls_id: int, sep_id: int,
                  **overrides: Any) -> Iterator[PretrainingInstance]:
        """`create_pretraining_instances` over tokenized `documents` with these settings.

        Args:
            documents: Iterable. Documents of `(token_ids, word_starts)` sentences (`tokenize_documents`).
            cls_id: int. The tokenizer's cls id.
            sep_id: int. The tokenizer's sep id.
            **overrides: `create_pretraining_instances` arguments in place of the config's (e.g. the seed,
                the buffers).

        Returns:
            An iterator of `PretrainingInstance`.
        """
        settings = dict(sequence_length=self.sequence_length, objective=self.objective, packing=self.packing,
                        short_seq_prob=self.short_seq_prob, dupe_factor=self.dupe_factor, seed=self.seed,
                        document_buffer=self.document_buffer)
        return create_pretraining_instances(documents, cls_id=cls_id, sep_id=sep_id, **{**settings, **overrides})

    def settings(self, vocab_size: int) -> dict:
        """The settings recorded in `pretraining_data.json`."""
        recorded = dataclasses.asdict(self)
        for name in ("vocab", "out", "num_shards", "document_buffer", "tfds_split", "tfds_text_key"):
            recorded.pop(name)
        recorded.update(max_predictions_per_seq=self.predictions, vocab_size=vocab_size,
                        input=list(recorded["input"]))
        return recorded
