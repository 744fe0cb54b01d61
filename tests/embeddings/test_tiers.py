"""`kbert.embeddings` sits beside `kbert.export`: it loads exports and is called by the CLI alone."""

from tests.export.test_layering import import_graph, offenders

LOWER = ("layers", "models", "text", "tasks", "pretraining_data", "export", "training", "convert", "file_io")


def test_nothing_below_the_cli_imports_embeddings():
    found = {folder: offenders(folder, ("kbert.embeddings",)) for folder in LOWER}
    assert {folder: bad for folder, bad in found.items() if bad} == {}


def test_embeddings_import_neither_training_nor_the_cli_nor_task_code():
    # The readers' JSON-line parser is the one piece of kbert.tasks it shares.
    found = offenders("embeddings", ("kbert.cli", "kbert.training", "kbert.tasks", "kbert.models"))
    assert {name: [t for t in bad if t != "kbert.tasks.readers.local_files"] for name, bad in found.items()} == {
        name: [] for name in found}
    graph = import_graph()
    assert "kbert.embeddings.embed" in graph["kbert.cli.embed"]  # the scan sees these imports
    assert "kbert.embeddings.embedder" in graph["kbert.embeddings.search_index"]
