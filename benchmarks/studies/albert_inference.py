"""ALBERT-base encoder inference: kbert's AlbertEncoder against transformers' AlbertModel, the same weights.

A random-weight transformers `AlbertModel` of albert-base-v2's shape (vocabulary 30,000, embeddings 128, hidden
768, 12 layers running one shared block, 12 heads, feed-forward 3072, gelu_new), saved with `save_pretrained`
and read by `kbert.load_pretrained` (`--checkpoint DIR`: any Hugging Face AlbertModel directory instead).
Batches of 32 sentence pairs of 128 tokens, no padding, the same ids on both sides. Before timing, a child
process checks that the outputs agree (float32 max |difference| of sequence_output and pooled_output).

Cells, each in a process of its own (the threads each gets are part of what is measured), in interleaved rounds
with the order reversed every other round; each cell's best round is reported:
- kbert: the encoder called inside a `tf.function`, float32, and bfloat16 as `kbert export --precision bfloat16`
  computes it (`kbert.export.model_precision.with_precision`: Keras' mixed_bfloat16, float32 weights), with
  TensorFlow's default threads (each product split across the cores); and each one batch per core, as
  `kbert predict` serves (`kbert.export.serving_threads`: one thread a product, a batch per core in flight,
  oneDNN's weights laid out once).
- transformers: `AlbertModel` under `torch.inference_mode`, float32 and under `torch.autocast("cpu",
  dtype=torch.bfloat16)`, with `torch.set_num_threads(cores)`; and each one batch per core
  (`torch.set_num_threads(1)`, a Python thread per core), as benchmarks/serving.py runs PyTorch.
The bfloat16 cells run by default only where the CPU multiplies bfloat16 natively (avx512_bf16 or amx_bf16);
elsewhere `--variants` may still name them.

    python -m benchmarks.studies.albert_inference [--rounds 2] [--steps 4] [--write]
    python -m benchmarks.studies.albert_inference --batch-size 2 --sequence-length 16 --steps 2 --rounds 1  # smoke test
"""

from __future__ import annotations

import argparse
import os
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

MODULE = "benchmarks.studies.albert_inference"
# albert-base-v2's config.json, dropout aside (0 there too).
ALBERT_BASE = dict(vocab_size=30000, embedding_size=128, hidden_size=768, num_hidden_layers=12, num_attention_heads=12,
                   intermediate_size=3072, hidden_act="gelu_new", max_position_embeddings=512, type_vocab_size=2)
CLS, SEP = 2, 3  # ALBERT's SentencePiece ids of [CLS] and [SEP]
TOLERANCE = 1e-3  # float32 outputs differing by more stop the benchmark: the two would not compute the same model
# cell -> (framework, precision, one batch per core), and the name the table gives it
CELLS = cell_grid("torch")
LABELS = cell_labels("torch", {
    "kbert": ("kbert", "kbert AlbertEncoder, tf.function, float32",
              "kbert AlbertEncoder, tf.function, bfloat16 (the export's mixed_bfloat16)"),
    "torch": ("transformers", "transformers AlbertModel, inference_mode, float32",
              "transformers AlbertModel, bf16 autocast")})


def token_batch(batch: int, seq: int, seed: int = 0) -> dict[str, np.ndarray]:
    """`batch` rows of [CLS] a [SEP] b [SEP], `seq` tokens each (random ids, a random split), segments 0 then 1."""
    rng = np.random.default_rng(seed)
    token_ids = rng.integers(5, ALBERT_BASE["vocab_size"], (batch, seq)).astype("int32")
    segment_ids = np.zeros((batch, seq), "int32")
    for row in range(batch):
        split = int(rng.integers(1, seq - 1)) if seq > 3 else 1
        token_ids[row, [0, split, seq - 1]] = [CLS, SEP, SEP]
        segment_ids[row, split + 1:] = 1
    return {"token_ids": token_ids, "segment_ids": segment_ids, "padding_mask": np.ones((batch, seq), "int32")}


def write_random_albert(directory: str) -> str:
    """A random-weight transformers AlbertModel of albert-base-v2's shape, saved in Hugging Face's layout."""
    import torch
    import transformers

    torch.manual_seed(0)
    transformers.AlbertModel(transformers.AlbertConfig(**ALBERT_BASE)).save_pretrained(directory)
    return directory


Outputs = tuple[np.ndarray, np.ndarray]  # sequence_output, pooled_output, float32


def kbert_forward(checkpoint: str, precision: str, inputs: dict[str, np.ndarray]) -> Callable[[], Outputs]:
    """One batch through kbert's encoder in a `tf.function`, in `precision`; outputs cast to float32 in the graph."""
    import tensorflow as tf

    import kbert
    from kbert.export.model_precision import with_precision

    encoder = with_precision(kbert.load_pretrained(checkpoint, model_type="albert"), precision)
    x = {name: tf.constant(value) for name, value in inputs.items()}

    @tf.function
    def forward(x):
        out = encoder(x, training=False)
        return tf.cast(out["sequence_output"], tf.float32), tf.cast(out["pooled_output"], tf.float32)

    return lambda: tuple(t.numpy() for t in forward(x))


def torch_forward(checkpoint: str, precision: str, inputs: dict[str, np.ndarray]) -> Callable[[], Outputs]:
    """One batch through transformers' AlbertModel under `torch.inference_mode` (and bf16 autocast for bfloat16)."""
    import torch
    import transformers

    model = transformers.AlbertModel.from_pretrained(checkpoint).eval()
    x = {"input_ids": torch.from_numpy(inputs["token_ids"]).long(),
         "token_type_ids": torch.from_numpy(inputs["segment_ids"]).long(),
         "attention_mask": torch.from_numpy(inputs["padding_mask"]).long()}

    def forward() -> Outputs:
        with torch.inference_mode(), torch.autocast("cpu", dtype=torch.bfloat16, enabled=precision == "bfloat16"):
            out = model(**x)
        return out.last_hidden_state.float().numpy(), out.pooler_output.float().numpy()

    return forward


FORWARDS = {"kbert": kbert_forward, "torch": torch_forward}


def check_agreement(args: argparse.Namespace) -> dict[str, float | str]:
    """Max |difference| of both outputs: kbert float32 vs transformers float32, and each one's bfloat16 vs its
    float32; and the attention transformers runs (a fresh process)."""
    import transformers

    inputs = token_batch(args.batch_size, args.sequence_length)
    out = {(framework, precision): FORWARDS[framework](args.checkpoint, precision, inputs)()
           for framework in FORWARDS for precision in ("float32", "bfloat16")}

    def diff(a: Outputs, b: Outputs) -> float:
        return float(max(np.abs(x - y).max() for x, y in zip(a, b)))

    return {"float32": diff(out["kbert", "float32"], out["torch", "float32"]),
            "kbert_bf16": diff(out["kbert", "bfloat16"], out["kbert", "float32"]),
            "torch_bf16": diff(out["torch", "bfloat16"], out["torch", "float32"]),
            "attention": transformers.AlbertModel.from_pretrained(args.checkpoint).config._attn_implementation}


def time_cell(cell: str, args: argparse.Namespace) -> float:
    """Sentences/s of one cell over `args.steps` batches (at least one per worker), after warm-up (a fresh process)."""
    framework, precision, per_core = CELLS[cell]
    workers = set_cell_threads(framework, per_core)
    forward = FORWARDS[framework](args.checkpoint, precision, token_batch(args.batch_size, args.sequence_length))
    calls = [range(i, i + 1) for i in range(max(args.steps, workers))]
    for _ in range(2):  # the first traces the graph, the second finds oneDNN's kernels and layouts made
        serving_threads.run_in_flight(lambda _: forward(), calls[:workers], workers)
    start = time.perf_counter()
    serving_threads.run_in_flight(lambda _: forward(), calls, workers)
    return len(calls) * args.batch_size / (time.perf_counter() - start)


def report(rates: dict[str, list[float]], agreement: dict, args: argparse.Namespace, load_start: str) -> str:
    """The section: the ratio first, then the table, then how it was measured."""
    kbert_best, torch_best = best_cell(rates, CELLS, "kbert"), best_cell(rates, CELLS, "torch")
    shape = f"batch {args.batch_size} x {args.sequence_length}"
    lines = ratio_and_table(rates, LABELS, kbert_best, torch_best if kbert_best else None, "transformers",
                            f"cell (ALBERT-base, {shape})")
    import tensorflow as tf
    import torch
    import transformers

    source = args.checkpoint or "random, albert-base-v2's config, `save_pretrained` then `kbert.load_pretrained`"
    lines += [
        "",
        f"Command: `{command_line()}`  ",
        f"Host: {host_line()}; TensorFlow {tf.__version__}, torch {torch.__version__}, transformers "
        f"{transformers.__version__} (attention: {agreement['attention']}); "
        f"load average (1/5/15 min) {load_start} at the start, {load_average()} at the end; "
        f"{time.strftime('%Y-%m-%d')}.  ",
        f"Weights: {source}. Sentence pairs of {args.sequence_length} tokens, no padding. Each cell in a process of "
        f"its own, {len(next(iter(rates.values())))} interleaved round(s) of {args.steps} batches after two warm-up "
        f"calls per worker, the order reversed every other round; best round shown; one batch per core: "
        f"{serving_threads.cores()} batches in flight.  ",
        f"Outputs agree: max |difference| kbert vs transformers, float32: {agreement['float32']:.1e}; bfloat16 vs "
        f"float32: kbert {agreement['kbert_bf16']:.1e}, transformers {agreement['torch_bf16']:.1e}. The CPU "
        f"{'multiplies' if has_native_bf16() else 'does not multiply'} bfloat16 natively.",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkpoint", help="a Hugging Face AlbertModel directory (default: random base weights)")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--sequence-length", type=int, default=128)
    parser.add_argument("--write", action="store_true", help="also store the report as this host's section of "
                                                             "BENCHMARKS.md")
    cells, ablations = default_cells(CELLS, has_native_bf16())
    add_variant_arguments(parser, cells, steps=4, ablations=ablations)
    args = parser.parse_args(argv)
    if args.one:
        return answer_child(args, check_agreement, time_cell)
    chosen = chosen_variants(parser, args, list(CELLS))
    load_start = load_average()
    with tempfile.TemporaryDirectory() as tmp:
        checkpoint = args.checkpoint or write_random_albert(tmp)
        child_args = ["--checkpoint", checkpoint, "--batch-size", str(args.batch_size),
                      "--sequence-length", str(args.sequence_length), "--steps", str(args.steps)]
        agreement, rates = run_cells(MODULE, chosen, child_args, args.rounds, TOLERANCE, "transformers")
    publish(f"albert_inference {host_key()}", report(rates, agreement, args, load_start),
            write=args.write)
    return 0


if __name__ == "__main__":
    sys.exit(main())
