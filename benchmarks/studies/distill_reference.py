"""The reference distillation: kbert's SST-2 distillation recipe written in PyTorch on transformers.

What `benchmarks.studies.distillation` runs as `kbert distill classify --student-layers 3 --alpha 0.5
--unlabelled ...`, with the same teacher, the same starting student, loss, data, batches and schedule:

- `prepare` (a process that imports kbert): writes the teacher's encoder (`kbert.save_pretrained`, Hugging
  Face's layout) and its head (head.npz: kernel [hidden, classes], bias, and the labels in the head's column
  order, which is the task's, not sorted), and the same for the student kbert builds
  (`build_student(teacher, teacher.task, layers=3)`: teacher layers 0, 2, 4 with the embeddings, pooler and
  head). It asserts that transformers' `BertForSequenceClassification` reads the same token ids and gives the
  same logits as kbert's models on 50 dev sentences (to 1e-4).
- `train` (PyTorch only; runs `prepare` first in its own process where WORK lacks it): the student trained
  for `--epochs` with loss alpha * KL * T^2 + (1 - alpha) * CE on labelled batches and KL * T^2 alone on
  unlabelled ones (KL(softmax(t / T) || softmax(s / T)) averaged over the batch, `soft_target_kl`), the teacher
  in eval mode under `no_grad` (a fixed function of a text then: its logits of the 12,000 training texts are
  computed once, WORK/teacher_logits.npz, where kbert computes them in every step); BERT's AdamW (epsilon
  1e-6, weight decay 0.01 except biases and LayerNorm), gradients clipped at norm 1, 10% linear warmup then
  linear decay from step 0 (`benchmarks.common.hf_reference`); the configs' dropout 0.1 in the encoder and
  before the head.
- Batches as kbert's `mixed_batches` makes them: every labelled and every unlabelled batch of an epoch once,
  interleaved in the order of `np.random.default_rng(seed)` shuffling their part numbers (kbert's own order of
  parts, the same every epoch); each part reshuffled each epoch and, as kbert's default `group_by_length` does,
  each run of 16 batches' rows sorted by token count (labels kept in their shares) before the batches are
  cut and shuffled (`grouped_batches`). Which rows share a batch is not the same as in kbert's run: the
  shuffles are numpy's, not tf.data's, so the orders are alike in kind, not identical.
- Differences: kbert ran teacher and student under Keras' mixed bfloat16 (`--mixed-precision auto` on a CPU with
  bfloat16; the teacher's logits move by up to 0.02 from float32's, `prepare`'s origin.json); this reference
  computes in float32. Dev accuracy on all 872 SST-2 dev rows.

    python -m benchmarks.studies.distill_reference train --teacher /work/bench/distill/teacher \
        --train /work/bench/distill/train.tsv --unlabelled /work/bench/distill/unlabelled.txt \
        --work /tmp/distill_reference --seeds 0 1 2 3 4 --json /work/bench/distill_reference.json --resume
    (on a shared 2-core host the five seeds ran as five processes, `--threads 1 --seeds N` each, after one
    `train ... --cache-only`)
    python -m benchmarks.studies.distill_reference report --json /work/bench/distill_reference.json \
        --kbert-json /work/bench/distill.json

Measured: SST-2, 4,000 labelled rows + 8,000 unlabelled sentences, 2 epochs of 375 batches of 32, sequence
length 64, learning rate 5e-5, T = 2, alpha 0.5 (teacher 82.22):

| framework | seeds | dev accuracy, mean ± std (min–max) | per seed | minutes a run |
|---|---:|---|---|---:|
| kbert | 5 | 80.99 ± 0.32 (80.62–81.42) | 81.08, 81.42, 81.08, 80.62, 80.73 | 10.4 |
| PyTorch reference | 5 | 81.01 ± 0.10 (80.96–81.19) | 80.96, 80.96, 81.19, 80.96, 80.96 | 25.9 |

kbert minus reference: -0.02 points, 95% Welch interval [-0.44, +0.39] (df 4.8); the means are within 0.5 points:
the goal (parity within 0.5 points) is met, and the whole interval lies inside ±0.5. The reference's teacher scores
kbert's 82.22 on dev. Four of the five reference students score 80.96 (706 of 872 rows): their runs differ in every
step's loss (other batches), their predictions were not kept. The minutes are not a speed comparison: the kbert
runs ran one at a time, the reference's five at once, one thread each, on a host shared with other jobs.

Host: AMD EPYC (CPU family 25, model 17), 2 cores, avx512_bf16; load average 9.8 / 8.5 / 5.6 and
8.2 / 8.6 / 7.9 (1 / 5 / 15 minutes) during the runs, 2.0 / 4.1 / 6.1 at their end; 2026-11-29.

Smoke test: `benchmarks/studies/tests/test_distill_reference.py`.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import pathlib
import statistics
import subprocess
import sys
import time
from typing import TYPE_CHECKING, Any, Iterator, Sequence

import numpy as np

from benchmarks.common.hf_reference import (add_recipe_arguments, bert_adamw, bert_update, linear_warmup_linear_decay,
                                            read_tsv, shuffled_batches)
from benchmarks.common.finetune_tasks import DATA
from benchmarks.common.seed_spread import T95

if TYPE_CHECKING:
    import keras
    import torch

    from kbert.tasks import Task

DEV = DATA / "sst2" / "dev.tsv"
GROUP_WINDOW = 16  # batches per length-sorted run, as kbert.data_pipeline.GROUP_WINDOW
CHECK_ROWS = 50
TOLERANCE = 1e-4


# ---------------------------------------------------------------- preparation (imports kbert)

def prepare(teacher_dir: str, work: pathlib.Path, student_layers: int = 3, dev: pathlib.Path = DEV,
            text_column: str = "sentence", check_rows: int = CHECK_ROWS) -> dict[str, Any]:
    """Writes WORK/teacher and WORK/student in transformers' layout (+ head.npz) and asserts that transformers
    gives kbert's logits on the first `check_rows` dev texts; returns the largest differences."""
    import kbert
    from kbert.training.student import build_student

    teacher = kbert.load_model(teacher_dir, compile=False)
    student = build_student(teacher, teacher.task, layers=student_layers)
    lowercase = bool(getattr(teacher.tokenizer, "lowercase", True))
    texts = [row[0] for row in read_tsv(str(dev), text_column, None, text_column, check_rows)]
    differences = {}
    for name, model in (("teacher", teacher), ("student", student.model)):
        out = work / name
        kbert.save_pretrained(model.encoder, out, format="hf", vocabulary=teacher.tokenizer, lowercase=lowercase)
        kernel, bias = model.get_layer("logits").get_weights()
        np.savez(out / "head.npz", kernel=kernel, bias=bias, labels=np.array(teacher.task.labels))
        inputs = teacher.preprocessor(texts)
        exact = float32_copy(model, teacher.task)
        differences[name] = check_logits(out, texts, inputs, np.asarray(exact(inputs, training=False)),
                                         teacher.preprocessor.sequence_length)
        differences[f"{name} as loaded, in its saved precision"] = float(np.abs(
            np.asarray(model(inputs, training=False), np.float32) - np.asarray(exact(inputs, training=False))).max())
    (work / "origin.json").write_text(json.dumps({"teacher": str(teacher_dir), "student": student.origin,
                                                  "max_logit_difference": differences}, indent=1) + "\n")
    return differences


def float32_copy(model: keras.Model, task: Task) -> keras.Model:
    """`model` computing in float32: a run under mixed precision saves its models with their bfloat16 policy,
    and `check_logits` compares weights and arithmetic, not bfloat16's rounding."""
    from kbert.models.families import encoder_from_config

    copy = task.build_model(encoder_from_config(model.encoder.bert_config, dtype="float32"))
    copy.set_weights(model.get_weights())
    return copy


def check_logits(directory: pathlib.Path, texts: list[str], kbert_inputs: dict, kbert_logits: np.ndarray,
                 sequence_length: int) -> float:
    """Asserts that transformers reads `directory` into the token ids and the logits kbert gave; returns the
    largest logit difference."""
    import torch

    model, _ = load_classifier(directory)
    tokenizer = load_tokenizer(directory)
    encoded = tokenizer(texts, truncation=True, max_length=sequence_length, padding="max_length",
                        return_tensors="pt")
    ids = np.asarray(kbert_inputs["token_ids"])
    mask = np.asarray(kbert_inputs["padding_mask"]).astype(bool)
    theirs = encoded["input_ids"].numpy()[:, :ids.shape[1]]
    assert (np.where(mask, ids, 0) == np.where(mask, theirs, 0)).all(), f"{directory}: other token ids than kbert's"
    with torch.no_grad():
        logits = model(**encoded).logits.numpy()
    difference = float(np.abs(logits - kbert_logits).max())
    assert difference < TOLERANCE, f"{directory}: logits differ from kbert's by {difference}"
    return difference


# ---------------------------------------------------------------- training (PyTorch only)

def load_classifier(directory: pathlib.Path) -> tuple[torch.nn.Module, list[str]]:
    """`BertForSequenceClassification` of DIR with DIR/head.npz's head; the labels in its column order."""
    import torch
    from transformers import BertForSequenceClassification

    head = np.load(directory / "head.npz")
    labels = [str(label) for label in head["labels"]]
    model = BertForSequenceClassification.from_pretrained(str(directory), num_labels=len(labels))
    with torch.no_grad():
        model.classifier.weight.copy_(torch.from_numpy(head["kernel"].T))
        model.classifier.bias.copy_(torch.from_numpy(head["bias"]))
    return model.eval(), labels


def load_tokenizer(directory: pathlib.Path):
    from transformers import BertTokenizerFast

    return BertTokenizerFast.from_pretrained(str(directory))


def soft_target_kl(teacher_logits: torch.Tensor, student_logits: torch.Tensor, temperature: float) -> torch.Tensor:
    """KL(softmax(t / T) || softmax(s / T)) * T^2, averaged over the rows."""
    import torch.nn.functional as F

    log_t = F.log_softmax(teacher_logits.float() / temperature, dim=-1)
    log_s = F.log_softmax(student_logits.float() / temperature, dim=-1)
    return (log_t.exp() * (log_t - log_s)).sum(-1).mean() * temperature ** 2


def distillation_loss(teacher_logits: torch.Tensor, student_logits: torch.Tensor, labels: torch.Tensor | None,
                      temperature: float, alpha: float) -> torch.Tensor:
    """alpha * KL * T^2 + (1 - alpha) * cross-entropy on a labelled batch; KL * T^2 alone without labels."""
    import torch.nn.functional as F

    kl = soft_target_kl(teacher_logits, student_logits, temperature)
    if labels is None:
        return kl
    return alpha * kl + (1.0 - alpha) * F.cross_entropy(student_logits.float(), labels)


def mixed_order(counts: Sequence[int], seed: int) -> np.ndarray:
    """The part of every batch of an epoch, as kbert's `mixed_batches` orders them: each part's batches
    once, interleaved by a seeded shuffle (the same order every epoch)."""
    order = np.concatenate([np.full(count, i, np.int64) for i, count in enumerate(counts)])
    np.random.default_rng(seed).shuffle(order)
    return order


def grouped_batches(lengths: Sequence[int], strata: Sequence[int] | None, batch_size: int,
                    rng: np.random.Generator, window: int = GROUP_WINDOW) -> list[list[int]]:
    """Index batches grouped by length as kbert's `index_batches` makes them: a shuffle; each run of
    `window * batch_size` rows sorted by length (given `strata`, by each row's place within its stratum, so
    every batch keeps the run's shares); the runs cut into batches, shuffled through a buffer of `window`.
    An epoch of one run or less stays in random batches."""
    count = len(lengths)
    order = rng.permutation(count)
    if count <= window * batch_size:
        return [order[i:i + batch_size].tolist() for i in range(0, count, batch_size)]
    lengths = np.asarray(lengths)
    sorted_rows = []
    for start in range(0, count, window * batch_size):
        run = order[start:start + window * batch_size]
        run = run[np.argsort(lengths[run], kind="stable")]
        if strata is not None:
            stratum = np.asarray(strata)[run]
            rank = np.zeros(len(run))
            for value in np.unique(stratum):
                members = stratum == value
                rank[members] = (np.arange(members.sum()) + 0.5) / members.sum()
            run = run[np.argsort(rank, kind="stable")]
        sorted_rows.append(run)
    rows = np.concatenate(sorted_rows)
    batches = [rows[i:i + batch_size].tolist() for i in range(0, count, batch_size)]
    shuffled, buffer = [], []
    for batch in batches:  # tf.data's shuffle: draw at random from a buffer refilled in order
        buffer.append(batch)
        if len(buffer) == window:
            shuffled.append(buffer.pop(int(rng.integers(len(buffer)))))
    while buffer:
        shuffled.append(buffer.pop(int(rng.integers(len(buffer)))))
    return shuffled


def part_batches(lengths: Sequence[int], strata: Sequence[int] | None, batch_size: int, seed: int,
                 group_by_length: bool) -> list[list[int]]:
    """One epoch's index batches of a part: grouped by length, or a plain seeded shuffle."""
    if group_by_length:
        return grouped_batches(lengths, strata, batch_size, np.random.default_rng(seed))
    return shuffled_batches(len(lengths), batch_size, seed)


def teacher_logits(work: pathlib.Path, teacher: torch.nn.Module, tokenizer, texts: list[str],
                   sequence_length: int) -> np.ndarray:
    """The teacher's logits of every training text, computed once (in eval mode the teacher is a fixed
    function of a text, so they are what each step would compute) and kept in WORK/teacher_logits.npz."""
    import torch

    key = hashlib.sha256(json.dumps([texts, sequence_length]).encode()).hexdigest()
    path = work / "teacher_logits.npz"
    if path.exists():
        with np.load(path) as stored:
            if str(stored["key"]) == key:
                return stored["logits"]
    order = sorted(range(len(texts)), key=lambda i: len(texts[i]))  # similar lengths pad little
    logits = np.zeros((len(texts), teacher.config.num_labels), np.float32)
    with torch.no_grad():
        for start in range(0, len(order), 128):
            index = order[start:start + 128]
            inputs = tokenizer([texts[i] for i in index], truncation=True, max_length=sequence_length,
                               padding=True, return_tensors="pt")
            logits[index] = teacher(**inputs).logits.numpy()
    partial = path.with_suffix(f".{os.getpid()}.npz")
    np.savez(partial, logits=logits, key=key)
    partial.replace(path)
    return logits


def train(args: argparse.Namespace, seed: int, out: pathlib.Path) -> dict[str, Any]:
    """Distils WORK/teacher into WORK/student at `seed`; writes OUT/metrics.json and returns it."""
    import torch

    torch.manual_seed(seed)
    work = pathlib.Path(args.work)
    teacher, labels = load_classifier(work / "teacher")
    student, _ = load_classifier(work / "student")
    tokenizer = load_tokenizer(work / "teacher")
    rows = read_tsv(args.train, args.text_column, None, args.label_column, None)
    with open(args.unlabelled, encoding="utf-8") as handle:
        texts = [line.strip() for line in handle if line.strip()]
    dev_rows = read_tsv(args.validation, args.text_column, None, args.label_column, args.dev_rows)
    parts = [([r[0] for r in rows], [labels.index(r[2]) for r in rows]), (texts, None)]
    lengths = [[len(ids) for ids in tokenizer(p[0], add_special_tokens=False)["input_ids"]] for p in parts]

    def encode(batch_texts: list[str]) -> dict[str, torch.Tensor]:
        return dict(tokenizer(batch_texts, truncation=True, max_length=args.sequence_length, padding=True,
                              return_tensors="pt"))

    cached = teacher_logits(work, teacher, tokenizer, parts[0][0] + parts[1][0], args.sequence_length)
    targets = [torch.from_numpy(cached[:len(rows)]), torch.from_numpy(cached[len(rows):])]
    counts = [math.ceil(len(p[0]) / args.batch_size) for p in parts]
    order = mixed_order(counts, seed)
    steps = len(order) * args.epochs
    optimizer = bert_adamw(student, args.learning_rate, args.weight_decay)
    schedule = linear_warmup_linear_decay(optimizer, int(args.warmup_ratio * steps), steps)
    student.train()
    began, losses = time.perf_counter(), []
    for epoch in range(args.epochs):
        epoch_batches = [iter(part_batches(lengths[i], part[1], args.batch_size, seed * 1000 + 10 * epoch + i,
                                           not args.no_group_by_length)) for i, part in enumerate(parts)]
        for part in order:
            index = next(epoch_batches[part])
            texts_, labels_ = parts[part]
            inputs = encode([texts_[i] for i in index])
            target = None if labels_ is None else torch.tensor([labels_[i] for i in index])
            loss = distillation_loss(targets[part][index], student(**inputs).logits, target, args.temperature,
                                     args.alpha)
            losses.append(bert_update(student, optimizer, schedule, loss))
            if len(losses) % 25 == 0:
                print(f"seed {seed}: {len(losses)}/{steps} loss {statistics.fmean(losses[-25:]):.4f}", flush=True)
    seconds = time.perf_counter() - began
    student.eval()
    accuracy = 100 * evaluate(student, encode, dev_rows, labels)
    result = {"framework": "reference", "seed": seed, "accuracy": accuracy, "teacher_accuracy":
              100 * evaluate(teacher, encode, dev_rows, labels), "train_seconds": seconds, "steps": steps,
              "batches_per_epoch": {"labelled": counts[0], "unlabelled": counts[1]}, "num_examples": len(dev_rows),
              "losses": losses}
    out.mkdir(parents=True, exist_ok=True)
    (out / "metrics.json").write_text(json.dumps(result) + "\n", encoding="utf-8")
    return result


def evaluate(model: torch.nn.Module, encode, rows: list[tuple[str, Any, str]], labels: list[str]) -> float:
    """Accuracy of `model` on (text, _, label) rows."""
    import torch

    correct = 0
    with torch.no_grad():
        for start in range(0, len(rows), 128):
            chunk = rows[start:start + 128]
            predicted = model(**encode([r[0] for r in chunk])).logits.argmax(-1).tolist()
            correct += sum(labels[p] == r[2] for p, r in zip(predicted, chunk))
    return correct / len(rows)


# ---------------------------------------------------------------- the record

def welch_interval(a: Sequence[float], b: Sequence[float]) -> dict[str, float]:
    """mean(a) - mean(b) with its 95% Welch t-interval (degrees of freedom rounded down, at least 1)."""
    va, vb = statistics.variance(a) / len(a), statistics.variance(b) / len(b)
    df = (va + vb) ** 2 / (va ** 2 / (len(a) - 1) + vb ** 2 / (len(b) - 1)) if va + vb else len(a) + len(b) - 2
    half = T95.get(max(1, int(df)), 1.96) * math.sqrt(va + vb)
    mean = statistics.fmean(a) - statistics.fmean(b)
    return {"mean": mean, "low": mean - half, "high": mean + half, "df": df}


def report(reference: list[dict[str, Any]], kbert_runs: list[dict[str, Any]], tolerance: float = 0.5) -> str:
    """Markdown: each framework's dev accuracy over seeds and the difference of the means."""
    ours = {r["seed"]: r["accuracy"] for r in reference}
    theirs = {r["seed"]: r["accuracy"] for r in kbert_runs if r["variant"] == "distilled"}
    lines = ["| framework | seeds | dev accuracy, mean ± std (min–max) | per seed | minutes a run |",
             "|---|---:|---|---|---:|"]
    for name, scores, minutes in (
            ("kbert", theirs, [r["seconds"] / 60 for r in kbert_runs if r["variant"] == "distilled"]),
            ("PyTorch reference", ours, [r["train_seconds"] / 60 for r in reference])):
        values = [scores[s] for s in sorted(scores)]
        std = statistics.stdev(values) if len(values) > 1 else 0.0
        lines.append(f"| {name} | {len(values)} | {statistics.fmean(values):.2f} ± {std:.2f} ({min(values):.2f}–"
                     f"{max(values):.2f}) | {', '.join(f'{v:.2f}' for v in values)} | "
                     f"{statistics.fmean(minutes):.1f} |")
    if len(ours) > 1 and len(theirs) > 1:
        interval = welch_interval(list(theirs.values()), list(ours.values()))
        within = abs(interval["mean"]) <= tolerance
        lines.append(f"\nkbert minus reference: {interval['mean']:+.2f} points, 95% Welch interval "
                     f"[{interval['low']:+.2f}, {interval['high']:+.2f}] (df {interval['df']:.1f}); "
                     f"the means are {'within' if within else 'not within'} {tolerance} points.")
    return "\n".join(lines)


# ---------------------------------------------------------------- command line

def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    for name in ("prepare", "train"):
        sub = commands.add_parser(name)
        sub.add_argument("--teacher", required=True, help="the teacher's kbert model directory")
        sub.add_argument("--work", required=True, help="where the transformers checkpoints are written")
        sub.add_argument("--student-layers", type=int, default=3)
        sub.add_argument("--validation", default=str(DEV))
        sub.add_argument("--text-column", default="sentence")
    train_ = commands.choices["train"]
    train_.add_argument("--train", required=True, help="the labelled rows (TSV with a header)")
    train_.add_argument("--unlabelled", required=True, help="one text a line")
    train_.add_argument("--label-column", default="label")
    train_.add_argument("--dev-rows", type=int, help="evaluate on the first N dev rows (default: all)")
    train_.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    add_recipe_arguments(train_, epochs=2)  # kbert distill's recipe flags, at the study's sequence length
    train_.set_defaults(sequence_length=64)
    train_.add_argument("--temperature", type=float, default=2.0)
    train_.add_argument("--alpha", type=float, default=0.5)
    train_.add_argument("--no-group-by-length", action="store_true", help="plain shuffled batches")
    train_.add_argument("--threads", type=int, help="torch's CPU threads (default: every core)")
    train_.add_argument("--cache-only", action="store_true",
                        help="compute the teacher's logits once, train nothing (then run seeds in parallel)")
    train_.add_argument("--json", type=pathlib.Path, help="save the runs here, each as it finishes")
    train_.add_argument("--resume", action="store_true", help="skip the seeds already in --json")
    show = commands.add_parser("report")
    show.add_argument("--json", type=pathlib.Path, required=True)
    show.add_argument("--kbert-json", type=pathlib.Path, required=True, help="benchmarks.studies.distillation's")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    if args.command == "report":
        print(report(json.loads(args.json.read_text()), json.loads(args.kbert_json.read_text())))
        return
    work = pathlib.Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    if args.command == "prepare":
        print(json.dumps(prepare(args.teacher, work, args.student_layers, pathlib.Path(args.validation),
                                 args.text_column)))
        return
    if not (work / "student" / "head.npz").exists():  # kbert and TensorFlow stay out of the training process
        subprocess.check_call([sys.executable, "-m", "benchmarks.studies.distill_reference", "prepare",
                               "--teacher", args.teacher, "--work", str(work), "--student-layers",
                               str(args.student_layers), "--validation", args.validation,
                               "--text-column", args.text_column])
    import torch

    torch.set_num_threads(args.threads or os.cpu_count() or 1)
    runs = json.loads(args.json.read_text()) if args.resume and args.json and args.json.exists() else []
    if args.cache_only:
        teacher, _ = load_classifier(work / "teacher")
        texts = [r[0] for r in read_tsv(args.train, args.text_column, None, args.label_column, None)]
        with open(args.unlabelled, encoding="utf-8") as handle:
            texts += [line.strip() for line in handle if line.strip()]
        teacher_logits(work, teacher, load_tokenizer(work / "teacher"), texts, args.sequence_length)
        return
    for seed in args.seeds:
        if any(r["seed"] == seed for r in runs):
            continue
        result = train(args, seed, work / f"seed-{seed}")
        print(json.dumps({k: v for k, v in result.items() if k != "losses"}), flush=True)
        runs.append({k: v for k, v in result.items() if k != "losses"})
        if args.json:  # merged with what other processes (other seeds) wrote meanwhile
            saved = json.loads(args.json.read_text()) if args.json.exists() else []
            merged = {r["seed"]: r for r in saved + runs}
            args.json.write_text(json.dumps([merged[s] for s in sorted(merged)], indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
