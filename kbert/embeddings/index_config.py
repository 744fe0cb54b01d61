"""`SearchIndexConfig`: the settings of `build_search_index` (`kbert index`), in a module without TensorFlow."""

from __future__ import annotations

import dataclasses

METRICS = ("cosine", "dot")


@dataclasses.dataclass
class SearchIndexConfig:
    """Every setting of `build_search_index`; each is a `kbert index` flag.

    Attributes:
        embeddings: str. A `kbert embed` output directory (Parquet shards and manifest.json).
        out: str. The SavedModel directory to write (e.g. a TF Serving version directory `models/NAME/1`).
        model: str or None. The strings-in export that encodes queries; None: the manifest's model (the one
            that embedded the corpus).
        output_name: str or None. Its output holding the vectors; None: the manifest's.
        signature: str or None. Its signature to call; None: the manifest's.
        top_k: int. Results per query; at most the number of stored vectors (more is an error).
        metric: str. "cosine" (stored and query vectors L2-normalised) or "dot" (the raw inner product).
        force: bool. Replace `out` if it exists.

    Example:
        >>> SearchIndexConfig("vectors", out="models/search/1").top_k
        10
    """

    embeddings: str = dataclasses.field(metadata={
        "positional": True, "metavar": "EMB_DIR", "help": "a kbert embed output directory"})
    out: str = dataclasses.field(default="", metadata={
        "help": "SavedModel directory to write (e.g. models/search/1)"})
    model: str | None = dataclasses.field(default=None, metadata={
        "help": "strings-in export that encodes the queries (default: the one EMB_DIR's manifest names)"})
    output_name: str | None = dataclasses.field(default=None, metadata={
        "help": "its output holding the vectors (default: the manifest's)"})
    signature: str | None = dataclasses.field(default=None, metadata={
        "help": "its signature to call (default: the manifest's)"})
    top_k: int = dataclasses.field(default=10, metadata={
        "help": "results per query; more than the stored vectors is an error"})
    metric: str = dataclasses.field(default="cosine", metadata={
        "choices": METRICS,
        "help": "cosine: vectors and queries L2-normalised; dot: the raw inner product (default: cosine)"})
    force: bool = dataclasses.field(default=False, metadata={"switch": True, "help": "replace OUT if it exists"})

    def validate(self) -> None:
        """Raises ValueError naming the first setting that cannot run."""
        if not self.embeddings or not self.out:
            raise ValueError("the embeddings directory and out are required")
        if self.top_k < 1:
            raise ValueError(f"top_k must be at least 1, got {self.top_k}")
        if self.metric not in METRICS:
            raise ValueError(f"metric must be one of {list(METRICS)}, got {self.metric!r}")
