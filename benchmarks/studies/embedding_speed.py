"""Sentence embeddings per second: kbert's strings-in SavedModel against sentence-transformers' `encode`.

all-MiniLM-L6-v2 as shipped (`kbert.pretrained.minilm_path()`, a sentence-transformers directory), exported
as `kbert export ST_DIR --out E` writes it (`serving_default(text) -> embedding`: tokenizer, encoder, mean
pooling and normalisation in one graph) and as `--precision bfloat16` writes it; the same directory read by
`SentenceTransformer(ST_DIR).encode(texts, batch_size=32)`. The texts: the first `--texts` SST-2 train
sentences (../shared/data/sst2/train.tsv; generated sentences where it is absent), the same on both sides.
`encode` sorts its texts by length (characters, longest first) before cutting batches, so its batches pad
less than consecutive rows do; kbert's batches are consecutive rows, as a server receives them.
`--sort-by-length` hands every cell the texts in encode's order instead. Before timing, a child process
writes the exports and checks that the embeddings agree (float32 max |difference| at most 1e-5, or it stops).

Cells, each in a process of its own (the threads each gets are part of what is measured), in interleaved rounds
with the order reversed every other round; each cell's best round is reported. A step is one pass over the
texts, after one warm-up pass; the fastest step of a round counts.
- kbert: the SavedModel's `serving_default` called with batches of 32 raw strings, float32 and bfloat16, with
  TensorFlow's default threads (each product split across the cores); and each one batch per core, as
  `kbert predict` serves (`kbert.export.serving_threads`: one thread a product, a batch per core in flight,
  oneDNN's weights laid out once).
- sentence-transformers: `encode(texts, batch_size=32)` over all the texts, float32 and under
  `torch.autocast("cpu", dtype=torch.bfloat16)`, with `torch.set_num_threads(cores)`; and each one batch per
  core (`torch.set_num_threads(1)`, a Python thread per core calling `encode` on 32 texts), as
  benchmarks/serving.py runs PyTorch.
The bfloat16 cells run by default only where the CPU multiplies bfloat16 natively (avx512_bf16 or amx_bf16);
elsewhere `--variants` may still name them.

    python -m benchmarks.studies.embedding_speed [--texts 1024] [--rounds 3] [--steps 1] [--write]
    python -m benchmarks.studies.embedding_speed --texts 64 --rounds 1 --steps 1  # smoke test
"""

from __future__ import annotations

import argparse
import csv
import importlib.metadata
import os
import pathlib
import sys
import tempfile
import time
from collections.abc import Callable

import numpy as np

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from benchmarks.common.cell_grid import (answer_child, best_cell, cell_grid, cell_labels, default_cells,
                                         ratio_and_table, run_cells, set_cell_threads)
from benchmarks.common.report import (add_variant_arguments, chosen_variants, command_line, host_key, host_line,
                                      load_average, publish)
from kbert.export import serving_threads
from kbert.precision import has_native_bf16

MODULE = "benchmarks.studies.embedding_speed"
SST2_TRAIN = pathlib.Path(__file__).resolve().parents[3] / "shared" / "data" / "sst2" / "train.tsv"
TOLERANCE = 1e-5  # float32 embeddings differing by more stop the benchmark: the two would not compute the same
# cell -> (framework, precision, one batch per core), and the name the table gives it
CELLS = cell_grid("st")
LABELS = cell_labels("st", {
    "kbert": ("kbert SavedModel", "kbert SavedModel (strings in), float32", "kbert SavedModel, `--precision bfloat16`"),
    "st": ("sentence-transformers `encode`", "sentence-transformers `encode`, float32",
           "sentence-transformers `encode`, bf16 autocast")})
WORDS = ("the film a story of its actors and music never quite finds an ending but every scene is warm funny "
         "slow bright dull moving with plot characters director who seems to care little about pace").split()


def read_texts(path: str, count: int, sort_by_length: bool = False) -> tuple[list[str], str]:
    """The first `count` sentences of an SST-2 TSV (header `sentence<TAB>label`), or `count` generated ones where
    `path` is absent; longest first (by characters, as `encode` orders them) with `sort_by_length`.

    Returns:
        (texts, where they came from). Read with `open`, not `kbert.file_io`: a local data file, and the
        sentence-transformers cells' processes never load TensorFlow.
    """
    if os.path.isfile(path):
        with open(path, encoding="utf-8", newline="") as f:
            reader = csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE)
            texts = [row["sentence"] for _, row in zip(range(count), reader)]
        source = f"the first {len(texts)} SST-2 train sentences"
    else:
        rng = np.random.default_rng(0)
        texts = [" ".join(rng.choice(WORDS, int(rng.integers(3, 40)))) for _ in range(count)]
        source = f"{count} generated sentences of 3 to 39 words (no SST-2 at {path})"
    if sort_by_length:
        texts = [texts[i] for i in np.argsort([-len(t) for t in texts], kind="stable")]
        source += ", longest first"
    return texts, source


Encode = Callable[[list[str]], np.ndarray]  # texts -> (len(texts), hidden) float32 embeddings


def kbert_encoder(args: argparse.Namespace, precision: str) -> Encode:
    """The export's `serving_default` on consecutive batches of `args.batch_size` raw strings."""
    import tensorflow as tf
    import tensorflow_text  # noqa: F401  (registers the ops the export uses)

    loaded = tf.saved_model.load(os.path.join(args.exports, precision))
    serve = loaded.signatures["serving_default"]

    def encode(texts: list[str]) -> np.ndarray:
        return np.concatenate([serve(text=tf.constant(texts[i:i + args.batch_size]))["embedding"].numpy()
                               for i in range(0, len(texts), args.batch_size)])

    encode.loaded = loaded  # the signature's variables live as long as the loaded object
    return encode


def st_encoder(args: argparse.Namespace, precision: str) -> Encode:
    """`SentenceTransformer(model_dir).encode(texts, batch_size=args.batch_size)`, under bf16 autocast for
    bfloat16."""
    import torch
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(args.model_dir, device="cpu")

    def encode(texts: list[str]) -> np.ndarray:
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=precision == "bfloat16"):
            return model.encode(texts, batch_size=args.batch_size, show_progress_bar=False)

    encode.attention = model[0].auto_model.config._attn_implementation  # reported with the agreement
    return encode


ENCODERS = {"kbert": kbert_encoder, "st": st_encoder}


def padded_tokens(lengths: np.ndarray, batch_size: int) -> float:
    """Tokens per sentence after padding each batch of consecutive rows to its longest."""
    batches = [lengths[i:i + batch_size] for i in range(0, len(lengths), batch_size)]
    return float(sum(batch.max() * len(batch) for batch in batches) / len(lengths))


def check_agreement(args: argparse.Namespace) -> dict[str, float | str]:
    """Writes the exports the chosen cells need, then: max |difference| of the embeddings, kbert float32 vs
    sentence-transformers float32 and each one's bfloat16 vs its float32; the texts' tokens (a fresh process)."""
    import tensorflow as tf

    from kbert.export import export

    precisions = ["float32"] + (["bfloat16"] if any(CELLS[c][1] == "bfloat16" for c in args.variants.split(","))
                                else [])
    for precision in precisions:
        export(args.model_dir, os.path.join(args.exports, precision), precision=precision)
    texts, source = read_texts(args.data, args.texts, args.sort_by_length)
    encoders = {(framework, precision): ENCODERS[framework](args, precision)
                for framework in ENCODERS for precision in precisions}
    out = {key: encode(texts) for key, encode in encoders.items()}
    preprocess = encoders["kbert", "float32"].loaded.signatures["preprocess"]
    lengths = np.concatenate([preprocess(text=tf.constant(texts[i:i + 256]))["padding_mask"].numpy().sum(-1)
                              for i in range(0, len(texts), 256)])
    by_chars = lengths[np.argsort([-len(t) for t in texts], kind="stable")]

    def diff(a: tuple[str, str], b: tuple[str, str]) -> float:
        return float(np.abs(out[a] - out[b]).max())

    result = {"float32": diff(("kbert", "float32"), ("st", "float32")), "texts": source,
              "tokens": float(lengths.mean()), "padded": padded_tokens(lengths, args.batch_size),
              "padded_encode": padded_tokens(by_chars, args.batch_size),
              "attention": encoders["st", "float32"].attention}
    if "bfloat16" in precisions:
        result |= {"kbert_bf16": diff(("kbert", "bfloat16"), ("kbert", "float32")),
                   "st_bf16": diff(("st", "bfloat16"), ("st", "float32"))}
    return result


def time_cell(cell: str, args: argparse.Namespace) -> float:
    """Sentences/s of one cell: the fastest of `args.steps` passes over the texts after one warm-up pass (a
    fresh process)."""
    framework, precision, per_core = CELLS[cell]
    workers = set_cell_threads(framework, per_core)
    texts, _ = read_texts(args.data, args.texts, args.sort_by_length)
    encode = ENCODERS[framework](args, precision)
    # One call over all the texts (each encoder cuts its batches), or one batch per call, `workers` in flight.
    parts = serving_threads.batches(len(texts), args.batch_size, workers) if per_core else [range(len(texts))]

    def one_pass() -> None:
        serving_threads.run_in_flight(lambda rows: encode(texts[rows.start:rows.stop]), parts, workers)

    one_pass()
    best = float("inf")
    for _ in range(args.steps):
        start = time.perf_counter()
        one_pass()
        best = min(best, time.perf_counter() - start)
    return len(texts) / best


def report(rates: dict[str, list[float]], agreement: dict, args: argparse.Namespace, load_start: str) -> str:
    """The section: the ratio first, then the table, then how it was measured."""
    lines = ratio_and_table(rates, LABELS, best_cell(rates, CELLS, "kbert"), best_cell(rates, CELLS, "st"),
                            "sentence-transformers", f"cell (all-MiniLM-L6-v2, batch {args.batch_size})")
    versions = ", ".join(f"{name} {importlib.metadata.version(name)}"
                         for name in ("tensorflow", "torch", "sentence-transformers", "transformers"))
    versions += f" (attention: {agreement['attention']})"
    order = ("`--sort-by-length`: every cell gets them longest first" if args.sort_by_length else
             "kbert's batches are consecutive rows, `encode` sorts by characters first")
    bf16 = (f"; bfloat16 vs float32: kbert {agreement['kbert_bf16']:.1e}, sentence-transformers "
            f"{agreement['st_bf16']:.1e}" if "kbert_bf16" in agreement else "")
    lines += [
        "",
        f"Command: `{command_line()}`  ",
        f"Host: {host_line()}; {versions}; load average (1/5/15 min) {load_start} at the start, {load_average()} "
        f"at the end; {time.strftime('%Y-%m-%d')}.  ",
        f"Texts: {agreement['texts']}, {agreement['tokens']:.1f} tokens on average with [CLS]/[SEP]; padded to each "
        f"batch's longest: {agreement['padded']:.1f} tokens a sentence in consecutive batches, "
        f"{agreement['padded_encode']:.1f} in `encode`'s order ({order}).  ",
        f"Each cell in a process of its own, {len(next(iter(rates.values())))} interleaved round(s), the order "
        f"reversed every other round, of the fastest of {args.steps} pass(es) over the texts after one warm-up "
        f"pass; best round shown; one batch per core: {serving_threads.cores()} batches in flight.  ",
        f"Embeddings agree: max |difference| kbert vs sentence-transformers, float32: {agreement['float32']:.1e}"
        f"{bf16}. The CPU {'multiplies' if has_native_bf16() else 'does not multiply'} bfloat16 natively.",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model-dir", help="a sentence-transformers directory (default: the shipped "
                                            "all-MiniLM-L6-v2)")
    parser.add_argument("--data", default=str(SST2_TRAIN), help="SST-2 train.tsv (absent: generated sentences)")
    parser.add_argument("--texts", type=int, default=1024, help="how many sentences each pass embeds")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--sort-by-length", action="store_true", help="give every cell the texts longest first, "
                                                                      "as encode orders them")
    parser.add_argument("--write", action="store_true", help="also store the report as this host's section of "
                                                             "BENCHMARKS.md")
    parser.add_argument("--exports", help=argparse.SUPPRESS)  # a child process: where the exports are
    cells, ablations = default_cells(CELLS, has_native_bf16())
    add_variant_arguments(parser, cells, steps=1, ablations=ablations)
    args = parser.parse_args(argv)
    if args.model_dir is None:
        import kbert.pretrained

        args.model_dir = str(kbert.pretrained.minilm_path())
    if args.one:
        return answer_child(args, check_agreement, time_cell)
    chosen = chosen_variants(parser, args, list(CELLS))
    load_start = load_average()
    with tempfile.TemporaryDirectory() as tmp:
        child_args = ["--model-dir", args.model_dir, "--data", args.data, "--texts", str(args.texts),
                      "--batch-size", str(args.batch_size), "--steps", str(args.steps), "--exports", tmp,
                      "--variants", ",".join(chosen), *(["--sort-by-length"] if args.sort_by_length else [])]
        agreement, rates = run_cells(MODULE, chosen, child_args, args.rounds, TOLERANCE, "sentence-transformers")
    publish(f"embedding_speed {host_key()}", report(rates, agreement, args, load_start), write=args.write)
    return 0


if __name__ == "__main__":
    sys.exit(main())
