"""Sentences/s of kbert's tokenizer + packer in tf.data against HF `tokenizers` `encode_batch`.

Same texts, same output (`[CLS] ... [SEP]`, truncated and padded to --sequence-length), rounds
interleaved; also checks that every text gets identical ids. Texts: SST-2 train (dev when train is absent)
and SQuAD v1.1 dev contexts from ../shared/data, generated sentences otherwise.

    python -m benchmarks.tokenize [--batch-size 1024] [--rounds 3] [--limit 20000]
"""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import platform
import random
import statistics
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import tensorflow as tf  # noqa: E402

from benchmarks.report import command_line, write_section  # noqa: E402
from kbert.pretrained import minilm_path  # noqa: E402
from kbert.text import BertPreprocessor, BertTokenizer, load_tokenizer  # noqa: E402

DATA = pathlib.Path(__file__).resolve().parents[2] / "shared" / "data"


def load_texts(limit: int) -> tuple[dict[str, list[str]], str]:
    sets, sources = {}, []
    sst2 = next((p for p in (DATA / "sst2" / "train.tsv", DATA / "sst2" / "dev.tsv") if p.is_file()), None)
    if sst2 is not None:
        lines = sst2.read_text(encoding="utf-8").splitlines()[1:]
        sets["sst2"] = [line.split("\t")[0] for line in lines][:limit]
        sources.append(str(sst2.relative_to(DATA.parent)))
    squad = DATA / "squad_v1.1" / "dev-v1.1.json"
    if squad.is_file():
        data = json.loads(squad.read_text(encoding="utf-8"))["data"]
        sets["squad_contexts"] = [p["context"] for a in data for p in a["paragraphs"]][:limit]
        sources.append(str(squad.relative_to(DATA.parent)))
    if not sets:
        rng = random.Random(0)
        words = "the a cat dog sat ran on mat quickly über naïve café , . ! ? 你 好 ， 。".split()
        sets["generated"] = [" ".join(rng.choice(words) for _ in range(rng.randint(3, 40))) for _ in range(limit)]
        sources.append("generated")
    return sets, ", ".join(sources)


def kbert_run(pre: BertPreprocessor, texts: list[str], batch_size: int) -> tuple[float, list]:
    ds = (tf.data.Dataset.from_tensor_slices(texts).batch(batch_size)
          .map(lambda x: pre(x)["token_ids"], num_parallel_calls=tf.data.AUTOTUNE).prefetch(tf.data.AUTOTUNE))
    start = time.perf_counter()
    out = [b for b in ds.as_numpy_iterator()]
    return time.perf_counter() - start, out


def hf_run(hf, texts: list[str], batch_size: int) -> tuple[float, list]:
    start = time.perf_counter()
    out = [hf.encode_batch(texts[i:i + batch_size]) for i in range(0, len(texts), batch_size)]
    return time.perf_counter() - start, out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch-size", type=int, default=1024)
    parser.add_argument("--sequence-length", type=int, default=128)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--limit", type=int, default=20000, help="texts per set")
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args()

    from tokenizers import Tokenizer

    path = minilm_path()
    hf = Tokenizer.from_file(str(path / "tokenizer.json"))
    hf.enable_truncation(args.sequence_length)
    hf.enable_padding(length=args.sequence_length, pad_id=0, pad_token="[PAD]")
    pre = BertPreprocessor(load_tokenizer(path), sequence_length=args.sequence_length)
    # For reference: tf_text.FastBertTokenizer (TFLite-only path, NFKC case folding; not exact).
    fast = BertPreprocessor(BertTokenizer(path / "vocab.txt", fast_normalizer=True), args.sequence_length)
    sets, sources = load_texts(args.limit)

    rows = []
    for name, texts in sets.items():
        kbert_run(pre, texts[: args.batch_size * 2], args.batch_size)  # trace once
        kbert_run(fast, texts[: args.batch_size * 2], args.batch_size)
        k_times, f_times, h_times = [], [], []
        for _ in range(args.rounds):
            t, k_out = kbert_run(pre, texts, args.batch_size)
            k_times.append(t)
            t, h_out = hf_run(hf, texts, args.batch_size)
            h_times.append(t)
            t, f_out = kbert_run(fast, texts, args.batch_size)
            f_times.append(t)
        ref = [e.ids for batch in h_out for e in batch]
        h = statistics.median(h_times)
        for label, times, out in (("kbert (exact)", k_times, k_out), ("FastBertTokenizer mode", f_times, f_out)):
            ours = [row.tolist() for batch in out for row in batch]
            mismatches = [i for i, (a, b) in enumerate(zip(ours, ref)) if a != b]
            k = statistics.median(times)
            rows.append((name, label, len(texts), len(texts) / k, len(texts) / h, h / k, len(mismatches)))
            for i in mismatches[:3]:
                print(label, "mismatch:", repr(texts[i][:200]))

    table = ["| texts | tokenizer | n | sent/s | HF tokenizers sent/s | ratio vs HF | id mismatches |",
             "|---|---|---:|---:|---:|---:|---:|"]
    table += [f"| {n} | {t} | {c} | {k:,.0f} | {h:,.0f} | **{r:.2f}x** | {m} |" for n, t, c, k, h, r, m in rows]
    body = "\n".join([
        "## Tokenization: kbert BertTokenizer + BertPreprocessor (tf.data) vs HF tokenizers encode_batch",
        "",
        f"Command: `{command_line()}`  ",
        f"Machine: {platform.machine()}, {os.cpu_count()} CPU cores, TF {tf.__version__}; texts from {sources}.  ",
        f"Both produce `[CLS] ... [SEP]` truncated/padded to {args.sequence_length} (all-MiniLM-L6-v2 vocab), "
        f"batch size {args.batch_size}, median of {args.rounds} interleaved rounds; "
        "id mismatches = texts whose packed ids differ.",
        "",
        *table,
    ])
    print(body)
    if not args.no_write:
        write_section("tokenize", body)


if __name__ == "__main__":
    main()
