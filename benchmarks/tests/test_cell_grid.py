"""benchmarks/common/cell_grid.py: the eight cells of a speed study, their labels, which run by default, and the
report's ratio and table (the runner is checked by the studies' smallest runs)."""

from benchmarks.common.cell_grid import best_cell, cell_grid, cell_labels, default_cells, ratio_and_table

CELLS = cell_grid("peer")
LABELS = cell_labels("peer", {"kbert": ("k", "k whole", "k whole bf16"), "peer": ("p", "p whole", "p autocast")})


def test_cell_grid_is_each_framework_precision_and_thread_layout():
    assert CELLS == {
        "kbert": ("kbert", "float32", False), "kbert_bf16": ("kbert", "bfloat16", False),
        "kbert_per_core": ("kbert", "float32", True), "kbert_bf16_per_core": ("kbert", "bfloat16", True),
        "peer": ("peer", "float32", False), "peer_bf16": ("peer", "bfloat16", False),
        "peer_per_core": ("peer", "float32", True), "peer_bf16_per_core": ("peer", "bfloat16", True)}
    assert list(CELLS) == ["kbert", "kbert_bf16", "kbert_per_core", "kbert_bf16_per_core",
                           "peer", "peer_bf16", "peer_per_core", "peer_bf16_per_core"]


def test_cell_labels_name_the_per_core_cells_from_the_short_names():
    assert LABELS == {
        "kbert": "k whole", "kbert_bf16": "k whole bf16",
        "kbert_per_core": "k, float32, one batch per core (`kbert predict`'s threads)",
        "kbert_bf16_per_core": "k, bfloat16, one batch per core",
        "peer": "p whole", "peer_bf16": "p autocast",
        "peer_per_core": "p, float32, one batch per core",
        "peer_bf16_per_core": "p, bf16 autocast, one batch per core"}
    assert list(LABELS) == list(CELLS)


def test_bfloat16_cells_run_by_default_only_where_the_cpu_has_it():
    everything, none = default_cells(CELLS, True)
    assert everything == list(CELLS) and none == []
    run, named_only = default_cells(CELLS, False)
    assert named_only == ["kbert_bf16", "kbert_bf16_per_core", "peer_bf16", "peer_bf16_per_core"]
    assert run == ["kbert", "kbert_per_core", "peer", "peer_per_core"]


def test_best_cell_is_the_best_round_of_each_framework():
    rates = {"kbert": [1.0, 4.0], "kbert_per_core": [3.0, 3.5], "peer": [2.0, 1.0]}
    assert best_cell(rates, CELLS, "kbert") == "kbert"
    assert best_cell(rates, CELLS, "peer") == "peer"
    assert best_cell({"peer": [1.0]}, CELLS, "kbert") is None


def test_ratio_and_table_open_with_kbert_over_the_peer():
    rates = {"kbert": [3.0, 4.0], "peer_per_core": [2.0]}
    assert ratio_and_table(rates, LABELS, "kbert", "peer_per_core", "the peer", "cell (tiny)") == [
        "**kbert's best / the peer' best: 2.00x** (goal >= 1.3: met): k whole 4.0 sentences/s against "
        "p, float32, one batch per core 2.0.", "",
        "| cell (tiny) | sentences/s | per round | vs the peer' best |", "|---|---:|---|---:|",
        "| k whole | 4.0 | 3.0, 4.0 | 2.00x |",
        "| p, float32, one batch per core | 2.0 | 2.0 | 1.00x |"]
    # Without the peer: no ratio, and "-" for each cell.
    assert ratio_and_table({"kbert": [1.0]}, LABELS, "kbert", None, "the peer", "cell") == [
        "| cell | sentences/s | per round | vs the peer' best |", "|---|---:|---|---:|", "| k whole | 1.0 | 1.0 | - |"]
