"""`EmbedConfig`: the settings of `embed_corpus` (`kbert embed`), in a module without TensorFlow.

Its fields are `kbert embed`'s flags, so the command's `--help` reads them without loading TensorFlow.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from kbert.constants import GROUP_WINDOW, PROMPT_SIGNATURE
from kbert.embeddings.corpus_rows import FILE_FORMATS


@dataclasses.dataclass
class EmbedConfig:
    """Every setting of `embed_corpus` and `embed_corpus_beam`; each is a `kbert embed` flag.

    Attributes:
        model: str. A strings-in SavedModel (`kbert export`) whose signature takes one batch of texts.
        input: Sequence[str]. Globs of JSONL, CSV, TSV or Parquet files; local paths or URLs.
        out: str. The output directory: Parquet shards and `manifest.json`.
        text_column: str. The column (JSON field) holding the text.
        id_column: str. The column holding each row's id (a string, or a JSON / Parquet integer).
        output_name: str. The signature output holding the vectors, `(batch, H)` floats.
        signature: str. The signature to call.
        prompt_name: str or None. Embed with the sentence model's prompt of this name: the export's
            `prompt_NAME` signature (`kbert export` of a model with prompts); None: `signature`, whose
            `serving_default` applies the model's default prompt, if it has one.
        batch_size: int. Texts per call of the model.
        sort_window: int. Batches sorted by length together: the rows `[k * W, (k + 1) * W)` of a file,
            W = `sort_window * batch_size` (less the skipped ones), are cut into batches longest first
            (`kbert.length_batches`), whatever runs them, so that the vectors do not depend on the runner;
            1: consecutive rows, batch k holding rows `[k * batch_size, (k + 1) * batch_size)`.
        num_shards: int. Output shards; a row goes to the shard that a hash of its id picks.
        file_format: str or None. "jsonl", "csv", "tsv" or "parquet"; None: from each file's extension.
        workers: int or None. Batches run at once by the one-process path; None: one per CPU core.
        force: bool. Replace `out` if it exists and is not empty.

    Example:
        >>> EmbedConfig(model="export/minilm", input=["docs/*.jsonl"], out="vectors").batch_size
        64
    """

    model: str = dataclasses.field(metadata={
        "positional": True, "metavar": "MODEL",
        "help": "a strings-in SavedModel (kbert export) whose signature takes a batch of texts"})
    input: Sequence[str] = dataclasses.field(default=(), metadata={
        "help": "glob(s) of JSONL, CSV, TSV or Parquet files, local or URLs (quote them)"})
    out: str = dataclasses.field(default="", metadata={
        "help": "output directory: Parquet shards (id, embedding) and manifest.json"})
    text_column: str = dataclasses.field(default="text", metadata={
        "help": "column (JSON field) holding the text"})
    id_column: str = dataclasses.field(default="id", metadata={
        "help": "column holding each row's id; a row without one is skipped and counted"})
    output_name: str = dataclasses.field(default="embedding", metadata={
        "help": "the signature's output holding the vectors (a bare encoder export: mean_embedding)"})
    signature: str = dataclasses.field(default="serving_default", metadata={"help": "signature to call"})
    prompt_name: str | None = dataclasses.field(default=None, metadata={
        "help": "embed with the sentence model's prompt NAME (e.g. query, passage): the export's prompt_NAME "
                "signature (default: serving_default, with the model's default prompt if it has one)"})
    batch_size: int = dataclasses.field(default=64, metadata={
        "help": "texts per call: rows of one file, the same batches with or without --beam"})
    sort_window: int = dataclasses.field(default=GROUP_WINDOW, metadata={
        "help": "batches whose rows are sorted by length together, so that a batch pads little (1: "
                f"consecutive rows; default: {GROUP_WINDOW})"})
    num_shards: int = dataclasses.field(default=4, metadata={
        "help": "output shards; each row goes to the shard a hash of its id picks"})
    file_format: str | None = dataclasses.field(default=None, metadata={
        "choices": FILE_FORMATS, "help": "input format (default: from each file's extension)"})
    workers: int | None = dataclasses.field(default=None, metadata={
        "help": "batches run at once without --beam (default: one per CPU core)"})
    force: bool = dataclasses.field(default=False, metadata={
        "switch": True, "help": "replace OUT if it exists and is not empty"})

    def validate(self) -> None:
        """Raises ValueError naming the first setting that cannot run."""
        if not self.model:
            raise ValueError("model is required: a strings-in SavedModel directory")
        if not self.input or isinstance(self.input, str) and not self.input.strip():
            raise ValueError("input is required: one or more globs of JSONL, CSV, TSV or Parquet files")
        if not self.out:
            raise ValueError("out is required: the output directory")
        for name in ("batch_size", "num_shards", "sort_window"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1, got {getattr(self, name)}")
        if self.workers is not None and self.workers < 1:
            raise ValueError(f"workers must be at least 1, got {self.workers}")
        if self.file_format is not None and self.file_format not in FILE_FORMATS:
            raise ValueError(f"file_format must be one of {list(FILE_FORMATS)}, got {self.file_format!r}")
        if self.prompt_name is not None and self.signature != "serving_default":
            raise ValueError(f"prompt_name {self.prompt_name!r} picks the signature "
                             f"{self.call_signature()!r}: give it or signature {self.signature!r}, not both")
        if self.text_column == self.id_column:
            raise ValueError(f"text_column and id_column are both {self.text_column!r}: name two columns")

    def call_signature(self) -> str:
        """The export's signature that embeds: `prompt_NAME` with a prompt name, else `signature`."""
        return PROMPT_SIGNATURE.format(self.prompt_name) if self.prompt_name is not None else self.signature

    def settings(self) -> dict:
        """What `manifest.json` records of the run's settings."""
        return {"model": self.model, "signature": self.call_signature(), "output_name": self.output_name,
                "text_column": self.text_column, "id_column": self.id_column, "batch_size": self.batch_size,
                "sort_window": self.sort_window}


def inputs_of(config: EmbedConfig) -> list[str]:
    """`config.input` as a list of globs (a lone string is one glob)."""
    return [config.input] if isinstance(config.input, str) else list(config.input)
