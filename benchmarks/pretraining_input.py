"""Input-pipeline throughput for pretraining with dynamic masking, at sequence length 128 and 512.

Measures sequences/s that `tf.data` delivers (no model), in interleaved rounds:
  - kbert dynamic TFRecords: `create-pretraining-data --masking dynamic` output read with
    `load_pretraining_dataset` (parse + `DynamicMasker`), the feed `kbert pretrain` uses;
  - kbert static TFRecords: the same instances with masks written in (parse only);
  - masking alone on the same in-memory batches: kbert `DynamicMasker` vs keras-hub
    `MaskedLMMaskGenerator` (tensorflow-text `mask_language_model`), the peer;
  - raw text end to end (`text_pretraining_dataset`: read, tokenize, build instances in Python, mask).
Corpora: ../shared/data/corpora (English Gutenberg, Chinese CLUECorpusSmall) when present, else
generated text.

    python -m benchmarks.pretraining_input [--rounds 3] [--max-mb 2]
"""

from __future__ import annotations

import argparse
import os
import pathlib
import random
import statistics
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import tensorflow as tf

from benchmarks.common.report import command_line, cpu_name, write_section
from kbert.cli.main import main as kbert_main
from kbert.pretraining_data.create_config import CreatePretrainingDataConfig
from kbert.pretraining_data.dynamic_masking import DynamicMasker
from kbert.pretraining_data.text_dataset import text_pretraining_dataset
from kbert.pretraining_data.tfrecords import load_pretraining_dataset
from kbert.pretrained import minilm_path
from kbert.text.bert_tokenizer import BertTokenizer, read_vocabulary

CORPORA = pathlib.Path(__file__).resolve().parents[2] / "shared" / "data" / "corpora"
BATCH = 128


def corpus_file(workdir: pathlib.Path, max_mb: float) -> tuple[pathlib.Path, str]:
    """Up to `max_mb` of English Gutenberg text (paragraphs as documents), or generated text."""
    out = workdir / "en.txt"
    budget = int(max_mb * 2**20)
    books = sorted((CORPORA / "en_gutenberg_nltk").glob("*.txt"))
    if books:
        text = "".join(book.read_text(encoding="utf-8", errors="replace") for book in books)[:budget]
        out.write_text(text, encoding="utf-8")
        return out, f"English Gutenberg, first {len(text) / 2**20:.1f} MB (layout: sentences)"
    rng = random.Random(0)
    words = "the cat sat on a mat while dogs ran over green hills and people talked about books".split()
    lines = []
    while sum(map(len, lines)) < budget:
        lines.extend(" ".join(rng.choices(words, k=rng.randint(6, 25))) + " ." for _ in range(rng.randint(3, 30)))
        lines.append("")
    out.write_text("\n".join(lines), encoding="utf-8")
    return out, f"generated English text, {max_mb} MB"


def throughput(dataset: tf.data.Dataset, batches: int) -> float:
    iterator = iter(dataset)
    for _ in range(3):
        next(iterator)
    start = time.perf_counter()
    for _ in range(batches):
        next(iterator)
    return batches * BATCH / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--max-mb", type=float, default=2.0)
    parser.add_argument("--batches", type=int, default=30)
    args = parser.parse_args()
    vocab = minilm_path() / "vocab.txt"
    vocabulary = read_vocabulary(vocab)
    tokenizer = BertTokenizer(vocabulary)
    work = pathlib.Path(tempfile.mkdtemp(prefix="kbert_input_bench_"))
    text, corpus_note = corpus_file(work, args.max_mb)
    zh = CORPORA / "zh_corpus" / "CLUECorpusSmall_bert_sampled.txt"

    creation, pipelines = [], {}
    for seq in (128, 512):
        for masking in ("dynamic", "static"):
            out = work / f"{masking}{seq}"
            start = time.perf_counter()
            kbert_main(["create-pretraining-data", "--input", str(text), "--vocab", str(vocab), "--out", str(out),
                        "--sequence-length", str(seq), "--dupe-factor", "2", "--masking", masking,
                        "--whole-word-masking", "--num-shards", "4"])
            creation.append((f"en, seq {seq}, {masking}", time.perf_counter() - start, out))
            pipelines[f"kbert {masking} TFRecords, wwm"] = pipelines.get(f"kbert {masking} TFRecords, wwm", {})
            pipelines[f"kbert {masking} TFRecords, wwm"][seq] = load_pretraining_dataset(out, BATCH, repeat=True, seed=0)
        # Masking alone on identical in-memory batches: kbert vs keras-hub (tensorflow-text).
        unmasked = load_pretraining_dataset(work / f"static{seq}", BATCH, repeat=True).take(8).cache().repeat()
        unmasked = unmasked.map(lambda f: {k: f[k] for k in ("token_ids", "segment_ids", "padding_mask",
                                                                "next_sentence_label")})
        preds = round(seq * 0.15)
        pipelines.setdefault("masking only: kbert DynamicMasker", {})[seq] = DynamicMasker(
            vocabulary, preds, seed=0).apply(unmasked).prefetch(4)
        import keras_hub

        generator = keras_hub.layers.MaskedLMMaskGenerator(
            len(vocabulary), 0.15, tokenizer.mask_token_id, mask_selection_length=preds,
            unselectable_token_ids=[tokenizer.pad_token_id, tokenizer.unk_token_id, tokenizer.cls_token_id,
                                    tokenizer.sep_token_id, tokenizer.mask_token_id])
        pipelines.setdefault("masking only: keras-hub MaskedLMMaskGenerator", {})[seq] = unmasked.map(
            lambda f: generator(f["token_ids"]), num_parallel_calls=tf.data.AUTOTUNE).prefetch(4)
        pipelines.setdefault("raw text end to end (tokenize + instances + mask)", {})[seq] = text_pretraining_dataset(
            CreatePretrainingDataConfig(input=[str(text)], sequence_length=seq, dupe_factor=1, seed=0,
                                        whole_word_masking=True), tokenizer, batch_size=BATCH).repeat()
        if zh.is_file():
            pipelines.setdefault("raw Chinese text end to end, jieba wwm", {})[seq] = text_pretraining_dataset(
                CreatePretrainingDataConfig(input=[str(zh)], sequence_length=seq, dupe_factor=1, seed=0,
                                            whole_word_masking=True, language="zh"), tokenizer, batch_size=BATCH).repeat()

    results: dict[tuple[str, int], list[float]] = {}
    for _ in range(args.rounds):  # interleaved: every pipeline once per round
        for name, by_seq in pipelines.items():
            for seq, dataset in by_seq.items():
                batches = args.batches if "raw" not in name else max(3, args.batches // 6)
                results.setdefault((name, seq), []).append(throughput(dataset, batches))
                print(f"{name:55s} seq {seq}: {results[(name, seq)][-1]:9.0f} seq/s", flush=True)

    median = {key: statistics.median(values) for key, values in results.items()}
    peer = "masking only: keras-hub MaskedLMMaskGenerator"
    lines = [
        "## Pretraining input pipeline (dynamic masking)",
        "",
        f"Command: `{command_line()}`  ",
        f"Machine: {cpu_name()}, {os.cpu_count()} CPU cores, TF {tf.__version__}; "
        f"batch {BATCH}; median of {args.rounds} interleaved rounds.  ",
        f"Corpus: {corpus_note}; vocabulary: all-MiniLM-L6-v2 (uncased, 30,522). Goal: >= 2,000 seq/s at 128.",
        "",
        "| pipeline | seq 128 (seq/s) | seq 512 (seq/s) |",
        "|---|---:|---:|",
    ]
    for name in pipelines:
        cells = [f"{median[(name, s)]:,.0f}" if (name, s) in median else "-" for s in (128, 512)]
        lines.append(f"| {name} | {cells[0]} | {cells[1]} |")
    lines += ["", "Ratios (same run): " + "; ".join(
        f"seq {s}: DynamicMasker / keras-hub = "
        f"{median[('masking only: kbert DynamicMasker', s)] / median[(peer, s)]:.2f}x, "
        f"dynamic TFRecords / 2,000 goal = {median[('kbert dynamic TFRecords, wwm', s)] / 2000:.1f}x"
        for s in (128, 512)) + ".", ""]
    lines.append("`create-pretraining-data` wall time (dupe factor 2, wwm, 4 shards): " + "; ".join(
        f"{name}: {seconds:.1f} s" for name, seconds, _ in creation) + ".")
    lines.append("")
    lines.append("keras-hub's generator picks by `ceil` over selectable tokens with stateful random ops, kbert's "
                 "by Google's `round(15% of length)` with stateless seeds (fresh per epoch, reproducible).")
    write_section("pretraining_input", "\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
