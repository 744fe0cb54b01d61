"""The tasks of `benchmarks.finetune_quality`: the data files, each side's command line, the scoring.

Scores are points (accuracy or F1 x 100) read from kbert's `metrics.json`, or computed from the
reference's predictions with kbert's own metrics (`kbert.metrics`) and, for SQuAD, kbert's span decoding
on the same windows, so both sides are scored by the same rules.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import pathlib
import sys
from typing import Any, Callable

from benchmarks.common.hf_reference import read_conll
from benchmarks.common.pair_task import build_pair_examples, write_pair_tsv

REPO = pathlib.Path(__file__).resolve().parents[2]
DATA = REPO.parent / "shared" / "data"
SQUAD = DATA / "squad_v1.1" / "dev-v1.1.json"
METRICS = {"SST-2": "accuracy", "SQuAD sentence pairs": "accuracy", "CoNLL-2003 NER": "entity F1",
           "SQuAD v1.1": "F1 (EM in the JSON)"}


def kbert_command() -> list[str]:
    """The `kbert` console script next to this Python, or `python -m kbert.cli.main` without it."""
    script = pathlib.Path(sys.executable).with_name("kbert")
    return [str(script)] if script.exists() else [sys.executable, "-m", "kbert.cli.main"]


@dataclasses.dataclass
class Task:
    """One benchmark task: how each side is called for a training size and seed, and how it is scored.

    Args:
        name: str. Row label.
        cli_task: str. `kbert finetune` subcommand ("classify", "tag" or "qa").
        train, validation: pathlib.Path. Data files.
        flags: list of str. The task's own flags, the same for both sides.
        sequence_length: int. Packing / window length.
        available: int. Training examples in `train` (a size above it uses them all).
        dev_rows: int or None. Evaluation examples (None: all).
        score: callable(framework, out directory, size) -> (score in points, metrics dict).
        prepare: optional callable(size, out directory) -> training examples, run before a size's runs.
    """

    name: str
    cli_task: str
    train: pathlib.Path
    validation: pathlib.Path
    flags: list[str]
    sequence_length: int
    available: int
    dev_rows: int | None
    score: Callable[[str, pathlib.Path, int], tuple[float, dict[str, Any]]]
    prepare: Callable[[int, pathlib.Path], int] | None = None

    def commands(self, size: int, seed: int, out: pathlib.Path, args: argparse.Namespace) -> dict[str, list[str]]:
        """{framework: argv} for one run writing to `out`/framework."""
        common = ["--sequence-length", str(self.sequence_length), "--epochs", str(args.epochs),
                  "--batch-size", str(args.batch_size), "--learning-rate", str(args.learning_rate),
                  "--warmup-ratio", str(args.warmup_ratio), "--seed", str(seed)]
        data = ["--train", str(self.train), "--validation", str(self.validation), "--max-train-examples", str(size)]
        if self.dev_rows:
            data += ["--max-validation-examples", str(self.dev_rows)]
        kbert = [*kbert_command(), "finetune", self.cli_task, "--init", str(args.init), *data, *common,
                 *self.flags, "--out", str(out / "kbert")]
        # kbert's side only (default float32, like the reference); the reference stays float32.
        kbert += ["--mixed-precision", getattr(args, "mixed_precision", None) or "none"]
        reference = [sys.executable, "-m", "benchmarks.common.hf_reference", self.cli_task, "--init", str(args.init),
                     *common, "--out", str(out / "reference")]
        if self.cli_task == "qa":
            reference += ["--features", str(out / "windows.npz")]
        else:
            reference += [*data, *self.flags]
        return {"kbert": kbert, "reference": reference}


def read_json(path: pathlib.Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def classify_score(framework: str, out: pathlib.Path, size: int) -> tuple[float, dict[str, Any]]:
    """Accuracy in points from either side's metrics.json."""
    metrics = read_json(out / framework / "metrics.json")
    return 100 * metrics["accuracy"], {"accuracy": metrics["accuracy"]}


def conll_scorer(test: pathlib.Path, dev_rows: int | None) -> Callable:
    """Entity F1 (kbert.metrics.entity_scores) of kbert's metrics.json or the reference's predictions."""

    def score(framework: str, out: pathlib.Path, size: int) -> tuple[float, dict[str, Any]]:
        if framework == "kbert":
            f1 = read_json(out / "kbert" / "metrics.json")["f1"]
        else:
            from kbert.metrics import entity_scores

            gold = [tags for _, tags in read_conll(str(test), dev_rows)]
            f1 = entity_scores(gold, read_json(out / "reference" / "predictions.json"))["f1"]
        return 100 * f1, {"f1": f1}

    return score


def read_squad_questions(article_range: tuple[int, int], limit: int | None) -> list[dict[str, Any]]:
    """The first `limit` questions of SQuAD v1.1 dev articles `article_range`, as kbert's QA examples."""
    articles = read_json(SQUAD)["data"][article_range[0]:article_range[1]]
    examples = [{"id": qa["id"], "question": qa["question"], "context": paragraph["context"],
                 "answers": qa["answers"]}
                for article in articles for paragraph in article["paragraphs"] for qa in paragraph["qas"]]
    return examples[:limit] if limit else examples


class SquadWindows:
    """Builds the windows both sides train on (kbert's `build_qa_features`), saves them for the
    reference, and decodes and scores the reference's logits with kbert's rules."""

    def __init__(self, args: argparse.Namespace, dev_rows: int | None) -> None:
        self.args, self.dev = args, read_squad_questions((40, 48), dev_rows)
        self.dev_features = None

    def _features(self, examples):
        import kbert
        from kbert.tasks.qa_features import build_qa_features

        return build_qa_features(examples, kbert.load_tokenizer(self.args.init), self.args.squad_sequence_length,
                                 self.args.doc_stride, 64)

    def prepare(self, size: int, out: pathlib.Path) -> int:
        """Writes out/windows.npz for `size` training questions; returns the number of training windows."""
        import numpy as np

        train = self._features(read_squad_questions((0, 40), size))
        if self.dev_features is None:
            self.dev_features = self._features(self.dev)
        splits = (("train", train), ("dev", self.dev_features))
        np.savez(out / "windows.npz", **{f"{split}_{name}": getattr(features, name) for split, features in splits
                                         for name in ("token_ids", "segment_ids", "padding_mask", "start_positions",
                                                      "end_positions")})
        return len(train.token_ids)

    def score(self, framework: str, out: pathlib.Path, size: int) -> tuple[float, dict[str, Any]]:
        """F1 in points; exact match too in the metrics dict."""
        if framework == "kbert":
            metrics = read_json(out / "kbert" / "metrics.json")
        else:
            import numpy as np
            from kbert.metrics import squad_evaluate
            from kbert.tasks.span_decoding import decode_answers

            logits = np.load(out / "reference" / "logits.npz")
            answers = decode_answers(self.dev, self.dev_features, logits["start_logits"], logits["end_logits"])
            metrics = squad_evaluate(self.dev, answers)
        return metrics["f1"], {"exact_match": metrics["exact_match"], "f1": metrics["f1"]}


# The --tasks names of benchmarks/finetune_quality.py, in the order build_tasks runs them.
TASK_NAMES = ("sst2", "pairs", "conll", "squad")


def build_tasks(args: argparse.Namespace, work: pathlib.Path) -> dict[str, tuple[Task, list[int]]]:
    """{task flag: (Task, training sizes)} for the tasks named in --tasks."""
    limit = (lambda own: args.dev_rows or own)
    tasks: dict[str, tuple[Task, list[int]]] = {}
    names = args.tasks.split(",")
    if "sst2" in names:
        rows = sum(1 for _ in open(DATA / "sst2/train.tsv", encoding="utf-8")) - 1
        tasks["sst2"] = (Task("SST-2", "classify", DATA / "sst2/train.tsv", DATA / "sst2/dev.tsv",
                              ["--text-column", "sentence", "--label-column", "label"], args.sst2_sequence_length, rows,
                              limit(args.sst2_dev_rows), classify_score), args.sizes)
    if "pairs" in names:
        squad = read_json(SQUAD)
        train = build_pair_examples(squad, (0, 40))
        write_pair_tsv(train, work / "pairs_train.tsv")
        write_pair_tsv(build_pair_examples(squad, (40, 48)), work / "pairs_dev.tsv")
        tasks["pairs"] = (Task("SQuAD sentence pairs", "classify", work / "pairs_train.tsv", work / "pairs_dev.tsv",
                               ["--text-column", "question", "--text-pair-column", "sentence",
                                "--label-column", "label"], args.pair_sequence_length, len(train),
                               limit(args.pair_dev_rows),
                               classify_score), args.pair_sizes or args.sizes)
    if "conll" in names:
        train_file, test_file = DATA / "conll2003/train.txt", DATA / "conll2003/test.txt"
        dev_rows = limit(args.conll_test_sentences)
        tasks["conll"] = (Task("CoNLL-2003 NER", "tag", train_file, test_file, [], args.conll_sequence_length,
                               len(read_conll(str(train_file), None)), dev_rows, conll_scorer(test_file, dev_rows)),
                          args.conll_sizes)
    if "squad" in names:
        windows = SquadWindows(args, limit(args.squad_eval_questions))
        flags = ["--doc-stride", str(args.doc_stride), "--train-articles", "0:40", "--validation-articles", "40:48"]
        tasks["squad"] = (Task("SQuAD v1.1", "qa", SQUAD, SQUAD, flags, args.squad_sequence_length,
                               len(read_squad_questions((0, 40), None)), limit(args.squad_eval_questions),
                               windows.score, windows.prepare), args.squad_sizes)
    return tasks
