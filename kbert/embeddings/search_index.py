"""`build_search_index`: a `kbert embed` output and its export as one semantic-search SavedModel (`kbert index`).

    OUT/saved_model.pb, OUT/variables/          the export's tokenizer and encoder, the vectors and ids
    OUT/assets/                                 the export's assets, and kbert_export.json describing OUT
    OUT/assets.extra/tf_serving_warmup_requests one request per signature, as `kbert export` writes them

`serving_default(text)` returns `ids` (batch, k) string and `scores` (batch, k) float32, best first
(`SearchModule`). The directory is written beside OUT and renamed into place, as `kbert export` does, so
OUT may be a TF Serving version directory (`models/search/1`) that a server polls. It loads in a process
that imports only TensorFlow and tensorflow-text:

    import tensorflow as tf, tensorflow_text
    search = tf.saved_model.load("models/search/1").signatures["serving_default"]
    search(text=tf.constant(["how do magnets work"]))["ids"]

k larger than the number of stored vectors is an error when the index is built (k is fixed in the graph).
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

import kbert.file_io as file_io
from kbert.embeddings.index_config import SearchIndexConfig

WARMUP_TEXTS = ["warmup query"]


def build_search_index(config: SearchIndexConfig) -> dict[str, Any]:
    """Writes the search SavedModel of `config.embeddings` at `config.out`.

    Args:
        config: SearchIndexConfig. The settings (`kbert index`'s flags).

    Returns:
        What `assets/kbert_export.json` records under "index" (count, dimension, top_k, metric, model,
        output_name, embeddings), plus "bytes" (the SavedModel's size) and "seconds".

    Raises:
        FileNotFoundError: no finished embeddings at `config.embeddings`, or no SavedModel at the model.
        FileExistsError: `out` exists and `config.force` is False.
        ValueError: k larger than the index, or the export's vectors are not the length of the stored ones.

    Example:
        >>> build_search_index(SearchIndexConfig("vectors", out="models/search/1"))["count"]  # doctest: +SKIP
        2067
    """
    import tensorflow as tf

    from kbert.embeddings.embedder import Embedder
    from kbert.embeddings.embedding_files import load_embeddings, read_manifest
    from kbert.embeddings.search_module import SearchModule

    config.validate()
    start = time.perf_counter()
    manifest = read_manifest(config.embeddings)
    model = config.model or manifest["model"]
    output_name = config.output_name or manifest.get("output_name", "embedding")
    signature = config.signature or manifest.get("signature", "serving_default")
    if config.top_k > manifest["count"]:
        raise ValueError(f"top_k {config.top_k} is larger than the index: {config.embeddings} holds "
                         f"{manifest['count']} vectors")
    out = file_io.fspath(config.out).rstrip("/")
    if file_io.exists(out) and not config.force:
        raise FileExistsError(f"{out} exists; pass --force to replace it")
    embedder = Embedder(model, output_name, signature)
    if embedder.dimension not in (None, manifest["dimension"]):
        raise ValueError(f"{model} output {output_name!r} has length {embedder.dimension}, but the vectors in "
                         f"{config.embeddings} have length {manifest['dimension']}: use the export that made them")
    ids, vectors = load_embeddings(config.embeddings)
    module = SearchModule(embedder.loaded, signature, output_name, vectors, ids, config.top_k, config.metric)
    index = {"count": len(ids), "dimension": int(vectors.shape[1]), "top_k": config.top_k,
             "metric": config.metric, "model": model, "signature": signature, "output_name": output_name,
             "embeddings": config.embeddings}
    with file_io.staged_directory(out) as tmp:  # written beside OUT, then renamed into place
        tf.saved_model.save(module, tmp, signatures=module.signatures())
        _write_config(tmp, embedder.model, index)
        _write_warmup(tmp, embedder.model, signature, embedder.input_name, vectors[:2])
    paths = [file_io.join(d, name) for d, _, names in file_io.walk(out) for name in names]
    size = sum(file_io.size(p) for p in paths if file_io.exists(p))  # not one of ram://'s phantom entries
    return {**index, "bytes": size, "seconds": time.perf_counter() - start}


def _write_config(directory: str, model: str, index: dict[str, Any]) -> None:
    """`assets/kbert_export.json` for OUT (replacing the copy of the export's): its signatures, so that
    `kbert predict OUT "query"` reads them, the export's precision, and the index."""
    from kbert.export.export_config import CONFIG_FILE, read_export_config

    precision = read_export_config(model).get("precision", "float32")
    signatures = {"serving_default": {"inputs": ["text"], "outputs": ["ids", "scores"], "trim": {}},
                  "search_vectors": {"inputs": ["embedding"], "outputs": ["ids", "scores"], "trim": {}}}
    file_io.write_json(file_io.join(directory, "assets", CONFIG_FILE),
                       {"task": "search", "precision": precision, "signatures": signatures, "index": index})


def _write_warmup(directory: str, model: str, signature: str, input_name: str, vectors: np.ndarray) -> None:
    """Warmup requests: the export's own example texts for its signature (else `WARMUP_TEXTS`), and the
    first stored vectors as queries of `search_vectors`."""
    from kbert.export.savedmodel import read_warmup, write_warmup_requests

    try:
        texts = next((inputs[input_name] for name, inputs in read_warmup(model)
                      if name == signature and input_name in inputs), None)
    except FileNotFoundError:  # an export without warmup requests
        texts = None
    texts = np.array(WARMUP_TEXTS if texts is None else [t.decode("utf-8") if isinstance(t, bytes) else t
                                                         for t in texts], dtype=object)
    write_warmup_requests(directory, [("serving_default", {"text": texts}),
                                      ("search_vectors", {"embedding": np.asarray(vectors, np.float32)})])
