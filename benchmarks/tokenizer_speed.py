"""Sentences/s of kbert's tokenizer + packer in tf.data against HF `tokenizers` `encode_batch`.

Same texts, same output (`[CLS] ... [SEP]`, RoBERTa's `<s> ... </s>`, truncated and padded to
--sequence-length), rounds interleaved; also checks that every text gets identical ids. Texts: SST-2 train
(dev when train is absent) and SQuAD v1.1 dev contexts from ../shared/data, generated sentences otherwise.

--family bert (the default): all-MiniLM-L6-v2's WordPiece vocabulary, kbert's `BertTokenizer` against its
tokenizer.json. albert and roberta: `kbert vocab` learns a vocabulary from the same texts in a temporary
directory (a SentencePiece Unigram model, a byte-level BPE), which `kbert.text.load_tokenizer` and
transformers' fast AlbertTokenizer / RobertaTokenizer both read; HF's side is that tokenizer's
`backend_tokenizer` (a `tokenizers.Tokenizer`).

    python -m benchmarks.tokenizer_speed [--batch-size 1024] [--rounds 3] [--limit 20000]
    python -m benchmarks.tokenizer_speed --family albert [--vocab-size 30000]
    python -m benchmarks.tokenizer_speed --family roberta [--vocab-size 50265]
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import pathlib
import platform
import random
import statistics
import subprocess
import sys
import tempfile
import time
from typing import TYPE_CHECKING
from unittest import mock

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import tensorflow as tf

from benchmarks.common.report import command_line, host_line, write_section
from kbert.data_pipeline import as_written
from kbert.pretrained import minilm_path
from kbert.text import BertPreprocessor, TFLiteBertTokenizer, load_tokenizer

if TYPE_CHECKING:
    import keras
    import tokenizers
    import transformers

ROOT = pathlib.Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"


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
        contexts = [p["context"] for a in data for p in a["paragraphs"]][:limit]
        # The 2,067 dev contexts, passed over until `limit` texts: a pass of 3 batches would time little but
        # the start of the tf.data iterator (0.05-0.15 s here, once per pass; a training epoch pays it once).
        sets["squad_contexts"] = contexts * -(-limit // len(contexts))
        sources.append(str(squad.relative_to(DATA.parent)))
    if not sets:
        rng = random.Random(0)
        words = "the a cat dog sat ran on mat quickly über naïve café , . ! ? 你 好 ， 。".split()
        sets["generated"] = [" ".join(rng.choice(words) for _ in range(rng.randint(3, 40))) for _ in range(limit)]
        sources.append("generated")
    return sets, ", ".join(sources)


def kbert_run(pre: BertPreprocessor, texts: list[str], batch_size: int,
              offsets: bool = False) -> tuple[tuple, tuple, list]:
    """Three passes over the texts through one new pipeline, built as the fine-tuning tasks build theirs.

    Returns the wall and CPU time of the first pass, whose clock includes starting the iterator (what a
    new epoch or evaluation pays), of the second (the iterator already running: tokenizing alone), and the
    first pass's ids. The third pass is not timed: it keeps the prefetch buffer as full at the end of the
    second pass as at its start.
    """
    fn = (lambda x: pre.call_with_offsets(x)["token_ids"]) if offsets else (lambda x: pre(x)["token_ids"])
    ds = as_written(tf.data.Dataset.from_tensor_slices(texts).batch(batch_size)
                    .map(fn, num_parallel_calls=tf.data.AUTOTUNE).prefetch(tf.data.AUTOTUNE).repeat(3))
    batches = -(-len(texts) // batch_size)
    start, cpu = time.perf_counter(), time.process_time()
    iterator = ds.as_numpy_iterator()
    out = [next(iterator) for _ in range(batches)]
    first = (time.perf_counter() - start, time.process_time() - cpu)
    start, cpu = time.perf_counter(), time.process_time()
    for _ in range(batches):
        next(iterator)
    second = (time.perf_counter() - start, time.process_time() - cpu)
    for _ in iterator:
        pass
    return first, second, out


def hf_run(hf, texts: list[str], batch_size: int) -> tuple[tuple, list]:
    start, cpu = time.perf_counter(), time.process_time()
    out = [hf.encode_batch(texts[i:i + batch_size]) for i in range(0, len(texts), batch_size)]
    return (time.perf_counter() - start, time.process_time() - cpu), out


# --family -> how `kbert vocab` learns its vocabulary from the texts: --kind, further flags, the default --vocab-size.
LEARNED = {
    "albert": ("sentencepiece", ["--lowercase"], 30000),  # uncased, as ALBERT's models (HF's defaults)
    "roberta": ("bpe", [], 50265),  # RoBERTa's vocabulary size
}


def learn_vocabulary(family: str, sets: dict[str, list[str]], size: int, workdir: pathlib.Path) -> pathlib.Path:
    """`family`'s vocabulary learned from the texts (each once, one a line) by `kbert vocab`, in a process of its
    own (its trainer's threads and settings stay out of this one); its directory."""
    kind, flags, _ = LEARNED[family]
    corpus, out = workdir / "texts.txt", workdir / family
    texts = dict.fromkeys(" ".join(text.splitlines()) for texts in sets.values() for text in texts)
    corpus.write_text("\n".join(texts) + "\n", encoding="utf-8")
    subprocess.run([sys.executable, "-m", "kbert.cli.main", "vocab", "--kind", kind, "--input", str(corpus),
                    "--size", str(size), "--out", str(out), *flags, "--quiet"], cwd=ROOT, check=True)
    return out


def hf_fast_tokenizer(family: str, directory: pathlib.Path) -> transformers.PreTrainedTokenizerBase:
    """transformers' fast tokenizer of `family` from `directory`, the one `AutoTokenizer` gives.

    Where the `sentencepiece` package's generated proto module needs a newer protobuf runtime than the installed
    one, transformers reads spiece.model with its own copy of that module (as tests/albert_reference.py does);
    left alone, it would try the file as tiktoken's and fail.
    """
    import transformers
    from transformers.utils import sentencepiece_model_pb2_new

    converter = importlib.import_module("transformers.convert_slow_tokenizer")  # transformers' attribute is a function
    read_proto = converter.import_protobuf
    try:
        read_proto()
    except Exception:  # the protobuf runtime refuses the generated module
        read_proto = lambda *_: sentencepiece_model_pb2_new  # noqa: E731
    with mock.patch.object(converter, "import_protobuf", read_proto):
        return transformers.AutoTokenizer.from_pretrained(str(directory), tokenizer_type=family)


def family_tokenizers(family: str, sets: dict[str, list[str]],
                      vocab_size: int | None) -> tuple[keras.layers.Layer, tokenizers.Tokenizer, str]:
    """kbert's tokenizer for `family`, the HF `tokenizers.Tokenizer` it is timed against, and what the section
    says of their vocabulary."""
    if family == "bert":
        from tokenizers import Tokenizer

        path = minilm_path()
        return load_tokenizer(path), Tokenizer.from_file(str(path / "tokenizer.json")), "all-MiniLM-L6-v2 vocab"
    kind, flags, default_size = LEARNED[family]
    size = default_size if vocab_size is None else vocab_size
    with tempfile.TemporaryDirectory() as workdir:
        directory = learn_vocabulary(family, sets, size, pathlib.Path(workdir))
        tokenizer = load_tokenizer(directory)  # holds its vocabulary: the directory may go
        peer = hf_fast_tokenizer(family, directory)
    hf = peer.backend_tokenizer
    if not peer.is_fast or hf.get_vocab_size() != tokenizer.vocabulary_size():
        raise SystemExit(f"transformers read {hf.get_vocab_size()} tokens as {type(peer).__name__} "
                         f"(fast: {peer.is_fast}), kbert {tokenizer.vocabulary_size()}")
    command = " ".join(["kbert vocab --kind", kind, "--size", str(size), *flags])
    files = "spiece.model" if family == "albert" else "vocab.json + merges.txt"
    return tokenizer, hf, (f"{tokenizer.vocabulary_size():,} tokens learned from these texts by `{command}`; "
                           f"HF's {type(peer).__name__} reads the same {files}")


# --family -> (section of BENCHMARKS.md, its title, kbert's path as the section describes it).
SECTIONS = {
    "bert": ("tokenize",
             "Tokenization: kbert BertTokenizer + BertPreprocessor (tf.data) vs HF tokenizers encode_batch",
             "The exact path runs each string through the cheapest route that gives BERT's result: printable-ASCII "
             "strings are only lower-cased (nothing to clean, no accents), the others get the full Unicode "
             "normalisation; then `FastWordpieceTokenizer` splits and runs WordPiece in one pass, except "
             "for strings where its splitting could differ from BERT's (26+ characters that no ASCII space or "
             "punctuation or CJK ideograph breaks, or one of 269 code points ICU counts as punctuation), which are "
             "split by regex first. One text packs as `[CLS] a [SEP]` columns, a pair by placing each segment. "
             "Offsets: printable-ASCII strings take the fast route; the others are normalised character by "
             "character (each distinct code point once), then split like the ids, and byte offsets are mapped back "
             "to characters. "),
    "albert": ("tokenize_albert", "Tokenization, ALBERT: kbert SentencePieceTokenizer + BertPreprocessor (tf.data) vs "
               "HF AlbertTokenizer (fast) encode_batch",
               "`SentencePieceTokenizer` normalises each string on code-point tables as HF's AlbertTokenizer does "
               "(`` and '' to \", NFKD and marks deleted, lower case, the model's character map), splits it at white "
               "space and runs tensorflow-text's `FastSentencepieceTokenizer` (Unigram) once per distinct word of the "
               "batch. One text packs as `[CLS] a [SEP]` columns, as BERT's. Offsets: tensorflow-text's "
               "`SentencepieceTokenizer` (the same ids, with byte offsets), mapped back to characters. "),
    "roberta": ("tokenize_roberta", "Tokenization, RoBERTa: kbert ByteLevelBpeTokenizer + BertPreprocessor (tf.data) "
                "vs HF RobertaTokenizer (fast) encode_batch",
                "`ByteLevelBpeTokenizer` splits each string into words with GPT-2's pattern, looks up the words whose "
                "bytes are one vocabulary token and merges the others' bytes, all words of the batch at once "
                "(`kbert.text.byte_pair_merging`). One text packs as `<s> a </s>` columns. "),
}
PIPELINE = (
    "The pipeline is the fine-tuning tasks' (batch, parallel map, prefetch, tf.data "
    "autotuning and static rewrites off: `kbert.data_pipeline.as_written`), passed over three times "
    "through one iterator. \"sent/s\" times the first pass, as a training epoch or an evaluation makes "
    "one: its clock includes starting the iterator, when tf.data instantiates the map function's graph "
    "(Grappler, kernel creation at about 0.1 ms a node, RE2 compiling the patterns). "
    "\"iterator running\" times the second pass: tokenizing "
    "alone, what every further batch costs. The start is the difference of the two. SQuAD's 2,067 dev "
    "contexts are passed over 10 times (20,670 texts), so that the start does not outweigh 3 batches of "
    "work."
)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--family", choices=("bert", *LEARNED), default="bert",
                        help="bert: all-MiniLM-L6-v2's vocabulary; albert, roberta: one learned from the texts")
    parser.add_argument("--vocab-size", type=int,
                        help="albert, roberta: the size asked of `kbert vocab` (default "
                             + ", ".join(f"{family} {size}" for family, (_, _, size) in LEARNED.items())
                             + "; a small text gives fewer tokens)")
    parser.add_argument("--batch-size", type=int, default=1024)
    parser.add_argument("--sequence-length", type=int, default=128)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--limit", type=int, default=20000, help="texts per set")
    parser.add_argument("--no-write", action="store_true")
    args = parser.parse_args(argv)
    if args.family == "bert" and args.vocab_size is not None:
        parser.error("--vocab-size is for the learned vocabularies (--family albert or roberta)")

    load = os.getloadavg()[0]
    sets, sources = load_texts(args.limit)
    tokenizer, hf, vocab = family_tokenizers(args.family, sets, args.vocab_size)
    hf.enable_truncation(args.sequence_length)
    hf.enable_padding(length=args.sequence_length, pad_id=tokenizer.pad_token_id,
                      pad_token=tokenizer.id_to_token(tokenizer.pad_token_id))
    pre = BertPreprocessor(tokenizer, sequence_length=args.sequence_length)

    runs = {  # label -> one timed pass over the texts
        "kbert (exact)": lambda texts: kbert_run(pre, texts, args.batch_size),
        "kbert (exact) + offsets, word ids": lambda texts: kbert_run(pre, texts, args.batch_size, offsets=True),
    }
    if args.family == "bert":
        # The tokenizer the TFLite export runs (lookup-table normalisation; the same ids as the exact path).
        lite = BertPreprocessor(TFLiteBertTokenizer(minilm_path() / "vocab.txt"), args.sequence_length)
        runs["TFLiteBertTokenizer (in TF)"] = lambda texts: kbert_run(lite, texts, args.batch_size)
    rows = []
    for name, texts in sets.items():
        for run in runs.values():
            run(texts[: args.batch_size * 2])  # warm the ops (each pass builds and traces its own pipeline)
        times = {label: ([], []) for label in runs}  # label -> (first passes, second passes)
        outs, h_times = {}, []
        for _ in range(args.rounds):
            t, h_out = hf_run(hf, texts, args.batch_size)
            h_times.append(t)
            for label, run in runs.items():
                first, second, outs[label] = run(texts)
                times[label][0].append(first)
                times[label][1].append(second)
        ref = [e.ids for batch in h_out for e in batch]
        h = statistics.median(t for t, _ in h_times)
        h_cpu = statistics.median(c for _, c in h_times)
        for label in runs:
            ours = [row.tolist() for batch in outs[label] for row in batch]
            mismatches = [i for i, (a, b) in enumerate(zip(ours, ref)) if a != b]
            k, k_cpu = (statistics.median(t[i] for t in times[label][0]) for i in (0, 1))
            running = statistics.median(t for t, _ in times[label][1])
            rows.append((name, label, len(texts), len(texts) / k, len(texts) / h, h / k, h_cpu / k_cpu,
                         len(texts) / running, h / running, 1000 * (k - running), len(mismatches)))
            for i in mismatches[:3]:
                print(label, "mismatch:", repr(texts[i][:200]))

    table = ["| texts | tokenizer | n | sent/s | HF tokenizers sent/s | ratio vs HF (wall) | "
             "ratio vs HF (CPU time) | sent/s, iterator running | ratio vs HF, iterator running | "
             "iterator start (ms) | id mismatches |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    table += [f"| {n} | {t} | {c} | {k:,.0f} | {h:,.0f} | **{r:.2f}x** | {rc:.2f}x | {kr:,.0f} | **{rr:.2f}x** | "
              f"{st:.0f} | {m} |" for n, t, c, k, h, r, rc, kr, rr, st, m in rows]
    key, title, path = SECTIONS[args.family]
    packed = "`<s> ... </s>`" if args.family == "roberta" else "`[CLS] ... [SEP]`"
    machine = (f"Machine: {platform.machine()}, {os.cpu_count()} CPU cores," if args.family == "bert"
               else f"Host: {host_line()};")
    body = "\n".join([
        f"## {title}",
        "",
        f"Command: `{command_line()}`  ",
        f"{machine} TF {tf.__version__}, load average "
        f"{load:.1f} at the start (the cores are shared); texts from {sources}.  ",
        f"Both produce {packed} truncated/padded to {args.sequence_length} ({vocab}), "
        f"batch size {args.batch_size}, median of {args.rounds} interleaved rounds; "
        "CPU time = the process's user+system time over the same passes (less sensitive than wall time to "
        "other jobs on the shared cores); id mismatches = texts whose packed ids differ. HF `encode_batch` always computes offsets and word ids "
        "too; the \"+ offsets, word ids\" row is `BertPreprocessor.call_with_offsets`.",
        "",
        *table,
        "",
        path + PIPELINE,
    ])
    print(body)
    if not args.no_write:
        write_section(key, body)


if __name__ == "__main__":
    main()
