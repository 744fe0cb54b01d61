"""`kbert embed`: rows/s of the one-process path against Apache Beam's DirectRunner with 2 worker processes.

The corpus is SQuAD v1.1 dev's 2,067 paragraphs (../shared/data/squad_v1.1/dev-v1.1.json), one JSONL row
each (`id` = article-paragraph, `text` = the paragraph), embedded by a `kbert export` of all-MiniLM-L6-v2
(sequence length 256, as sentence-transformers runs it; output `embedding` where the export has one, else
`mean_embedding`). Each path runs as its own `kbert embed` process, timed from its start (TensorFlow's
import and, for Beam, the workers' start-up included); the run's own "seconds" (after the imports) is
given too. Then the parity of the two outputs: the same ids, the largest difference of a vector entry, and
whether the shards are byte for byte the same.

    python -m benchmarks.studies.embed_corpus [--export DIR] [--rows 2067] [--batch-size 64]

Without `--export` the export is written first into the work directory. Needs apache-beam
(`pip install 'kbert[beam]'`); skips when it, the data or the MiniLM weights are absent.
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import re
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[2]
SQUAD_DEV = ROOT.parent / "shared" / "data" / "squad_v1.1" / "dev-v1.1.json"
DIRECT_2_WORKERS = ["--runner=DirectRunner", "--direct_num_workers=2", "--direct_running_mode=multi_processing"]


def run_kbert(*argv: str) -> tuple[float, str]:
    """Runs `kbert ARGV` in a fresh process (as a user would); returns its wall seconds and what it printed."""
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2",
               PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "kbert.cli.main", *argv], env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"kbert {argv[0]} failed:\n{proc.stderr[-3000:]}")
    print(proc.stdout.strip())
    return seconds, proc.stdout


def write_paragraphs(squad: pathlib.Path, path: pathlib.Path, rows: int) -> int:
    """SQuAD dev's paragraphs as JSONL rows {"id", "text"}; returns how many."""
    data = json.loads(squad.read_text(encoding="utf-8"))["data"]
    lines = [json.dumps({"id": f"{a:02d}-{p:02d}", "text": paragraph["context"]})
             for a, article in enumerate(data) for p, paragraph in enumerate(article["paragraphs"])][:rows]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return len(lines)


def output_name(export: str) -> str:
    config = json.loads((pathlib.Path(export) / "assets" / "kbert_export.json").read_text(encoding="utf-8"))
    outputs = config["signatures"]["serving_default"]["outputs"]
    return "embedding" if "embedding" in outputs else "mean_embedding"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--export", help="a kbert export of all-MiniLM-L6-v2 (default: written here first)")
    parser.add_argument("--rows", type=int, default=2067, help="paragraphs to embed (all: 2,067)")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--work", help="work directory (default: a temporary one)")
    parser.add_argument("--squad", default=str(SQUAD_DEV), help="SQuAD v1.1 dev JSON (default: %(default)s)")
    args = parser.parse_args()
    try:
        import apache_beam  # noqa: F401
    except ImportError:
        print("SKIP: apache-beam is not installed (pip install 'kbert[beam]').")
        return
    if not pathlib.Path(args.squad).is_file():
        print(f"SKIP: no SQuAD dev file at {args.squad}.")
        return
    import kbert

    with tempfile.TemporaryDirectory() as tmp:
        work = pathlib.Path(args.work or tmp)
        work.mkdir(parents=True, exist_ok=True)
        export = args.export
        if export is None:
            try:
                minilm = kbert.pretrained.minilm_path()
            except FileNotFoundError as error:
                print(f"SKIP: {error}")
                return
            export = str(work / "minilm")
            run_kbert("export", str(minilm), "--out", export, "--sequence-length", "256", "--force")
        rows = write_paragraphs(pathlib.Path(args.squad), work / "paragraphs.jsonl", args.rows)
        common = ["embed", export, "--input", str(work / "paragraphs.jsonl"), "--batch-size", str(args.batch_size),
                  "--output-name", output_name(export), "--force"]
        runs = {}
        for name, extra in (("one process", []), ("Beam DirectRunner, 2 worker processes", ["--beam", *DIRECT_2_WORKERS])):
            out = work / ("beam" if extra else "one")
            wall, printed = run_kbert(*common, "--out", str(out), *extra)
            manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
            inside = float(re.search(r" in ([\d.]+) s\.", printed).group(1))  # the command's own timing
            runs[name] = {"wall": wall, "inside": inside, "out": out, "manifest": manifest}
        (one, beam) = runs.values()
        ids_one, vectors_one = kbert.load_embeddings(str(one["out"]))
        ids_beam, vectors_beam = kbert.load_embeddings(str(beam["out"]))
        same_bytes = all((one["out"] / s["file"]).read_bytes() == (beam["out"] / s["file"]).read_bytes()
                         for s in one["manifest"]["shards"])
        print(f"\n{rows} SQuAD dev paragraphs, all-MiniLM-L6-v2 export (seq 256, {output_name(export)}), batch "
              f"{args.batch_size}, {os.cpu_count()} CPUs\n")
        print("| path | wall s (process) | embed s (after imports) | rows/s (wall) |")
        print("|---|---:|---:|---:|")
        for name, run in runs.items():
            print(f"| {name} | {run['wall']:.1f} | {run['inside']:.1f} | "
                  f"{run['manifest']['count'] / run['wall']:.1f} |")
        print(f"\nBeam / one process: {one['wall'] / beam['wall']:.2f}x the rows/s. Parity: ids "
              f"{'the same' if ids_one == ids_beam else 'DIFFERENT'} ({len(ids_one)}), largest vector difference "
              f"{np.abs(vectors_one - vectors_beam).max():.2e}, shards byte-identical: {same_bytes}.")


if __name__ == "__main__":
    main()
