"""Corpora to vectors and semantic search, on top of a strings-in export (`kbert embed`, `kbert index`).

This package sits beside `kbert.export`, one tier above the models: it only loads SavedModels that
`kbert export` (or anything with a strings-in signature) wrote, and calls their signatures, so it needs
no task, model or tokenizer code. `kbert.cli.embed` and `kbert.cli.index` call it.

    rows (`corpus_rows`) -> `embed_corpus` / `embed_corpus_beam` -> Parquet shards (`embedding_files`)
    -> `load_embeddings` -> `build_search_index` -> a `SearchModule` SavedModel
"""

from kbert.lazy_exports import lazy_exports

# name -> module; each is imported on first use (PEP 562), so TensorFlow-free modules of the package load fast.
_EXPORTS = {
    "EmbedConfig": "kbert.embeddings.embed_config",
    "Embedder": "kbert.embeddings.embedder",
    "ExportModelHandler": "kbert.embeddings.model_handler",
    "SearchIndexConfig": "kbert.embeddings.index_config",
    "SearchModule": "kbert.embeddings.search_module",
    "build_search_index": "kbert.embeddings.search_index",
    "embed_corpus": "kbert.embeddings.embed",
    "embed_corpus_beam": "kbert.embeddings.beam_embed",
    "load_embeddings": "kbert.embeddings.embedding_files",
    "read_manifest": "kbert.embeddings.embedding_files",
    "read_rows": "kbert.embeddings.corpus_rows",
}
__all__ = list(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
