"""`kbert index EMB_DIR --out S`: semantic search over a `kbert embed` output, as one strings-in SavedModel.

Example:
    kbert index vectors --model export/minilm --out models/search/1 --top-k 10
    kbert predict models/search/1 "how do magnets work"

The flags are the fields of `kbert.embeddings.SearchIndexConfig`; the work is
`kbert.embeddings.build_search_index`. The SavedModel's `serving_default(text)` returns `ids` and `scores`
(batch, k), best first: the export's encoder and an exact top-k over the stored vectors in one graph.
"""

from __future__ import annotations

import argparse

from kbert.cli.flags import add_dataclass_flags, collect
from kbert.embeddings.index_config import SearchIndexConfig


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Adds one flag per `SearchIndexConfig` field."""
    add_dataclass_flags(parser, SearchIndexConfig, required=("out",))


def run(args: argparse.Namespace) -> int:
    """Writes the search SavedModel; prints what it holds."""
    from kbert.embeddings.search_index import build_search_index

    config = SearchIndexConfig(**collect(args, SearchIndexConfig))
    index = build_search_index(config)
    print(f"Search index of {index['count']} vectors (dimension {index['dimension']}, top {index['top_k']}, "
          f"{index['metric']}) written to {config.out} ({index['bytes'] / 1e6:.1f} MB) in {index['seconds']:.1f} s.")
    return 0
