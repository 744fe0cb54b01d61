"""`kbert embed` against a script calling sentence-transformers' `encode`, each a whole process, on SQuAD's paragraphs.

The corpus: SQuAD v1.1 dev's 2,067 paragraphs (one JSONL row each, as `benchmarks.studies.embed_corpus` writes
them), embedded by all-MiniLM-L6-v2 at sequence length 256 (sentence-transformers' own limit for it). Each cell
is a fresh process timed from its start to its exit (imports, model load, reading, writing included), run
`--repeats` times in interleaved rounds, best kept:
- `kbert embed EXPORT --input paragraphs.jsonl --out OUT` on the float32 and `--precision bfloat16` exports,
  with rows sorted by length within windows (the default) and in file order (`--sort-window 1`);
- the same command on the float32 export written with every padded position computed, in file order: kbert
  before its encoder ran on real tokens only and before `kbert embed` sorted;
- a script that reads the same rows and calls `SentenceTransformer(DIR).encode(texts, batch_size)` (which
  sorts by length itself), in float32 and under `torch.autocast("cpu", dtype=torch.bfloat16)`, and saves the
  vectors.
The kbert outputs are checked against `encode`'s float32 vectors (largest difference) before the table.

    python -m benchmarks.studies.embed_vs_encode [--rows 2067] [--batch-size 64] [--repeats 2]
"""

from __future__ import annotations

import argparse
import os
import pathlib
import subprocess
import sys
import tempfile
import time

import numpy as np

from benchmarks.common.report import cpu_flags_that_matter, cpu_name, host_key, load_average
from benchmarks.studies.embed_corpus import ROOT, SQUAD_DEV, output_name, run_kbert, write_paragraphs

ENCODE = """
import json, sys, numpy as np, torch
from sentence_transformers import SentenceTransformer
model_dir, rows, out, precision, batch_size = sys.argv[1:6]
with open(rows, encoding="utf-8") as f:
    texts = [json.loads(line)["text"] for line in f if line.strip()]
model = SentenceTransformer(model_dir, device="cpu")
with torch.autocast("cpu", dtype=torch.bfloat16, enabled=precision == "bfloat16"):
    vectors = model.encode(texts, batch_size=int(batch_size), show_progress_bar=False, normalize_embeddings=True)
np.save(out, np.asarray(vectors, np.float32))
"""


def timed(argv: list[str]) -> float:
    """Wall seconds of one process (TensorFlow's and torch's logs kept quiet)."""
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", HF_HUB_OFFLINE="1",
               PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    start = time.perf_counter()
    proc = subprocess.run(argv, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"{argv[:4]} failed:\n{proc.stderr[-3000:]}")
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=2067, help="paragraphs to embed (all: 2,067)")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=2, help="interleaved rounds; each cell's best is kept")
    parser.add_argument("--squad", default=str(SQUAD_DEV), help="SQuAD v1.1 dev JSON (default: %(default)s)")
    args = parser.parse_args()
    if not pathlib.Path(args.squad).is_file():
        print(f"SKIP: no SQuAD dev file at {args.squad}.")
        return
    import kbert
    from kbert.export import export
    from kbert.layers import token_packing

    minilm = str(kbert.pretrained.minilm_path())
    with tempfile.TemporaryDirectory() as tmp:
        work = pathlib.Path(tmp)
        rows = write_paragraphs(pathlib.Path(args.squad), work / "paragraphs.jsonl", args.rows)
        exports = {}
        for precision in ("float32", "bfloat16"):
            exports[precision] = str(work / precision)
            run_kbert("export", minilm, "--out", exports[precision], "--sequence-length", "256",
                      "--precision", precision)
        with token_packing.padded():  # traced with every padded position computed
            exports["padded"] = str(export(minilm, work / "padded", sequence_length=256))
        kbert_cells = {
            "kbert embed, float32 export": ("float32", []),
            "kbert embed, bfloat16 export": ("bfloat16", []),
            "kbert embed, float32 export, file order (--sort-window 1)": ("float32", ["--sort-window", "1"]),
            "kbert embed, float32 export with padded positions computed, file order (before)":
                ("padded", ["--sort-window", "1"]),
        }
        cells = {name: [sys.executable, "-m", "kbert.cli.main", "embed", exports[which], "--input",
                        str(work / "paragraphs.jsonl"), "--batch-size", str(args.batch_size), "--output-name",
                        output_name(exports[which]), "--force", "--out", str(work / f"out{i}"), *extra]
                 for i, (name, (which, extra)) in enumerate(kbert_cells.items())}
        (work / "encode.py").write_text(ENCODE, encoding="utf-8")
        for precision in ("float32", "bfloat16"):
            label = "float32" if precision == "float32" else "bf16 autocast"
            cells[f"script calling sentence-transformers `encode`, {label}"] = [
                sys.executable, str(work / "encode.py"), minilm, str(work / "paragraphs.jsonl"),
                str(work / f"encode_{precision}.npy"), precision, str(args.batch_size)]
        best = {name: float("inf") for name in cells}
        for round_ in range(args.repeats):
            for name in (list(cells) if round_ % 2 == 0 else list(reversed(cells))):
                best[name] = min(best[name], timed(cells[name]))
        reference = np.load(work / "encode_float32.npy")
        ids = [f"{a:02d}-{p:02d}" for a, p in _ids(pathlib.Path(args.squad), rows)]
        differences = {}
        for i, name in enumerate(kbert_cells):
            found, vectors = kbert.load_embeddings(str(work / f"out{i}"))
            order = {key: row for row, key in enumerate(found)}
            differences[name] = float(np.abs(vectors[[order[key] for key in ids]] - reference).max())
    encode_best = min(v for k, v in best.items() if "encode" in k)
    print(f"{cpu_name()} ({host_key()}; {cpu_flags_that_matter()}), {os.cpu_count()} cores; load average "
          f"{load_average()}; {time.strftime('%Y-%m-%d')}\n")
    print(f"{rows} SQuAD dev paragraphs, all-MiniLM-L6-v2 at sequence length 256, batch {args.batch_size}; each "
          f"cell a whole process, best of {args.repeats} interleaved rounds.\n")
    print("| process | wall s | paragraphs/s | vs `encode`'s best | max difference vs `encode` float32 |")
    print("|---|---:|---:|---:|---:|")
    for name, seconds in best.items():
        difference = f"{differences[name]:.1e}" if name in differences else ""
        print(f"| {name} | {seconds:.1f} | {rows / seconds:.1f} | {encode_best / seconds:.2f}x | {difference} |")


def _ids(squad: pathlib.Path, rows: int) -> list[tuple[int, int]]:
    """(article, paragraph) of the first `rows` paragraphs, in `write_paragraphs`' order."""
    import json

    data = json.loads(squad.read_text(encoding="utf-8"))["data"]
    return [(a, p) for a, article in enumerate(data) for p in range(len(article["paragraphs"]))][:rows]


if __name__ == "__main__":
    main()
