"""An embedding student: all-MiniLM-L6-v2 distilled into 3 of its layers on unlabelled Wikipedia text, scored as
search on SQuAD v1.1 dev (each question looks for its own paragraph) and timed against its teacher.

One `kbert distill embed` process, as a user would call it: the teacher is the sentence-transformers directory as
published; the student keeps its layers 0, 2, 4 (`--student-layers 3`) and learns the teacher's vectors (mean
squared difference) on WikiText-2's test paragraphs and their sentences, texts that share Wikipedia's domain with
SQuAD but none of its articles. The evaluation is the embed task's retrieval over SQuAD dev's 2,067 paragraphs,
the first question of each (`recall@10`, `mrr@10`), for teacher and student alike. Speed: both exported as
strings-in SavedModels, embedding the questions and paragraphs at batch 32 (texts/s), and as dynamic-range int8
TFLite files, one question at a time (ms); best of `--repeats` passes, the two interleaved within each pass.

    python -m benchmarks.studies.embedding_distillation --epochs 2 --learning-rate 1e-4 --work /tmp/embed_distill
Smoke test: `--texts 64 --pairs 64 --epochs 1 --repeats 1`. `--student DIR` times and scores an existing student.

Measured (2-core AMD EPYC, family 25; the distillation beside other jobs, the timing alone with `--timed-pairs 500`):
teacher recall@10 / mrr@10 0.9255 / 0.7349, student 0.7813 / 0.5301 (before distillation 0.4088 / 0.2067); the
student 2.00x the teacher's texts/s through the SavedModel and 1.81x through int8 TFLite at batch 1.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import pathlib
import random
import re
import subprocess
import tempfile
import time

from benchmarks.common.finetune_tasks import DATA, SQUAD, kbert_command, read_json
from benchmarks.common.report import host_line, load_average
from benchmarks.serving import _dir_size, batches, time_interleaved

WIKITEXT = DATA / "corpora" / "wikitext2_raw" / "wiki.test.raw"
# WikiText's tokenization marks a hyphen, comma or point inside a word or number: "mid @-@ 1990s", "1 @,@ 000".
WIKITEXT_MARKS = {" @-@ ": "-", " @,@ ": ",", " @.@ ": "."}


def wikitext_texts(limit: int | None, seed: int = 0) -> list[str]:
    """WikiText-2 test's paragraphs (headings and lines under 8 words left out) and their sentences of 5-40 words,
    shuffled: long texts like SQuAD's paragraphs, short ones like its questions."""
    raw = WIKITEXT.read_text(encoding="utf-8").replace("\r\n", "\n")
    for mark, plain in WIKITEXT_MARKS.items():
        raw = raw.replace(mark, plain)
    paragraphs = [" ".join(line.split()) for line in raw.split("\n")]
    paragraphs = [p for p in paragraphs if len(p.split()) >= 8 and not p.startswith("=")]
    sentences = [s for p in paragraphs for s in re.split(r"(?<=[.!?]) (?=[A-Z])", p) if 5 <= len(s.split()) <= 40]
    texts = paragraphs + sentences
    random.Random(seed).shuffle(texts)
    return texts[:limit]


def squad_pairs(limit: int | None) -> list[dict[str, str]]:
    """(first question, paragraph) of every SQuAD dev paragraph: every paragraph is one candidate."""
    articles = json.loads(SQUAD.read_text(encoding="utf-8"))["data"]
    rows = [{"text": " ".join(p["qas"][0]["question"].split()), "text_pair": " ".join(p["context"].split())}
            for article in articles for p in article["paragraphs"]]
    return rows[:limit]


def write_lines(path: pathlib.Path, lines: list[str]) -> pathlib.Path:
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


def distil(args: argparse.Namespace, teacher: pathlib.Path, work: pathlib.Path) -> tuple[pathlib.Path, float]:
    """Runs `kbert distill embed` (unless its output is there) and returns the student directory and seconds."""
    student = work / "student"
    if (student / "distillation.json").exists():
        return student, float("nan")
    texts = write_lines(work / "unlabelled.txt", wikitext_texts(args.texts))
    pairs = write_lines(work / "squad_pairs.jsonl", [json.dumps(row) for row in squad_pairs(args.pairs)])
    command = [*kbert_command(), "distill", "embed", "--teacher", str(teacher), "--unlabelled", str(texts),
               "--validation", str(pairs), "--student-layers", str(args.student_layers), "--epochs", str(args.epochs),
               "--sequence-length", str(args.sequence_length), "--batch-size", str(args.batch_size),
               "--learning-rate", str(args.learning_rate), "--seed", str(args.seed), "--verbose", "2",
               "--out", str(student)]
    start = time.perf_counter()
    with open(work / "distill.log", "w", encoding="utf-8") as log:
        subprocess.run(command, stdout=log, stderr=subprocess.STDOUT, check=True)
    return student, time.perf_counter() - start


def speed(teacher: pathlib.Path, student: pathlib.Path, texts: list[str], questions: list[str],
          repeats: int) -> dict[str, dict[str, float]]:
    """Texts/s through each one's SavedModel at batch 32 and ms a question through its int8 TFLite file."""
    import tensorflow as tf

    from kbert.export import export, load_source, tflite_convert
    from kbert.export import tflite as tflite_lib

    with tempfile.TemporaryDirectory() as scratch:
        models = {}
        for name, directory in (("teacher", teacher), ("student", student)):
            source = load_source(directory)
            saved = export(source, pathlib.Path(scratch) / name / "1")
            int8 = tflite_convert.convert(source, quantize="dynamic")
            models[name] = {"signature": tf.saved_model.load(str(saved)).signatures["serving_default"],
                            "interpreter": tflite_lib.interpreter(int8, num_threads=os.cpu_count()),
                            "saved_mb": _dir_size(saved) / 1e6, "int8_mb": len(int8) / 1e6}
        saved_runners = {name: (lambda fn: lambda b: fn(text=tf.constant(b)))(m["signature"])
                         for name, m in models.items()}
        lite_runners = {name: (lambda it: lambda b: tflite_lib.run(it, {"text": b}))(m["interpreter"])
                        for name, m in models.items()}
        saved_seconds = time_interleaved(saved_runners, batches(texts, 32), repeats)
        lite_seconds = time_interleaved(lite_runners, [[q] for q in questions], repeats)
    return {name: {"texts_per_second": len(texts) / saved_seconds[name],
                   "int8_ms": 1000 * lite_seconds[name] / len(questions),
                   "saved_mb": m["saved_mb"], "int8_mb": m["int8_mb"]} for name, m in models.items()}


def report(args: argparse.Namespace, record: dict) -> str:
    teacher, student = record["metrics"]["teacher"], record["metrics"]["student"]
    fast = record["speed"]
    lines = ["| model | recall@1 | recall@10 | mrr@10 | SavedModel batch 32, texts/s | int8 TFLite batch 1, ms | "
             "sizes SavedModel / int8 |", "|---|---:|---:|---:|---:|---:|---|"]
    for name, metrics in (("teacher (6 layers)", teacher), (f"student ({args.student_layers} layers)", student)):
        key = name.split()[0]
        lines.append(f"| {name} | {metrics['recall@1']:.4f} | {metrics['recall@10']:.4f} | {metrics['mrr@10']:.4f} | "
                     f"{fast[key]['texts_per_second']:.1f} | {fast[key]['int8_ms']:.2f} | "
                     f"{fast[key]['saved_mb']:.1f} MB / {fast[key]['int8_mb']:.1f} MB |")
    gaps = {k: student[k] - teacher[k] for k in ("recall@10", "mrr@10")}
    timed = len(squad_pairs(args.pairs)[:args.timed_pairs])
    return (f"SQuAD dev, {teacher['num_examples']} questions over as many paragraphs (the texts of {timed} pairs "
            f"timed at batch 32, {args.timed_questions} questions at batch 1); {record['unlabelled']} "
            f"unlabelled texts x {args.epochs} epoch(s), learning rate {args.learning_rate}, sequence length "
            f"{args.sequence_length}; "
            + ("an existing student" if math.isnan(record["seconds"]) else
               f"distillation {record['seconds'] / 60:.0f} min") + ".\n"
            f"Host: {host_line()}; load average at the end {load_average()}.\n\n" + "\n".join(lines) +
            f"\n\nstudent minus teacher: recall@10 {gaps['recall@10']:+.4f}, mrr@10 {gaps['mrr@10']:+.4f}; "
            f"speed-up {fast['student']['texts_per_second'] / fast['teacher']['texts_per_second']:.2f}x (SavedModel), "
            f"{fast['teacher']['int8_ms'] / fast['student']['int8_ms']:.2f}x (int8 TFLite)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--texts", type=int, default=None, help="unlabelled texts (default: all, about 9,800)")
    parser.add_argument("--pairs", type=int, default=None, help="SQuAD dev paragraphs (default: all 2,067)")
    parser.add_argument("--student-layers", type=int, default=3)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--learning-rate", type=float, default=1e-4)
    parser.add_argument("--sequence-length", type=int, default=256, help="all-MiniLM-L6-v2's max_seq_length")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--timed-pairs", type=int, default=None, help="pairs whose two texts are timed at batch 32 "
                        "(default: all)")
    parser.add_argument("--timed-questions", type=int, default=200, help="questions timed one at a time")
    parser.add_argument("--work", type=pathlib.Path, default=None, help="kept: the student, its log, the texts")
    parser.add_argument("--student", type=pathlib.Path, default=None, help="an existing student: score and time it")
    parser.add_argument("--json", type=pathlib.Path, default=None)
    args = parser.parse_args()

    from kbert.pretrained import minilm_path

    teacher = pathlib.Path(minilm_path())
    work = args.work or pathlib.Path(tempfile.mkdtemp(prefix="embed_distill_"))
    work.mkdir(parents=True, exist_ok=True)
    student, seconds = (args.student, float("nan")) if args.student else distil(args, teacher, work)
    record = read_json(student / "distillation.json")
    pairs = squad_pairs(args.pairs)
    result = {"metrics": {"teacher": record["teacher_metrics"], "student": read_json(student / "metrics.json")},
              "unlabelled": record["unlabelled_examples"], "seconds": seconds,
              "speed": speed(teacher, student, [t for row in pairs[:args.timed_pairs] for t in row.values()],
                             [row["text"] for row in pairs[:args.timed_questions]], args.repeats)}
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(report(args, result))


if __name__ == "__main__":
    main()
