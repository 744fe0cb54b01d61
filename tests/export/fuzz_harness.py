"""Fuzzes a classifier export's two runtimes: no crash, finite shaped outputs, TFLite = SavedModel.

    python -m tests.export.fuzz_harness [--examples 10000] [--seed 0] [--out fuzz.json]

Builds two tiny classifiers over all-MiniLM-L6-v2's vocabulary (a one-text export and a pair export, whose
`serving_default` takes `text` and `text_pair`) with `kbert.save_model` and `kbert export --tflite`, then
sends the same generated batches (`tests.export.fuzz_inputs`: any Unicode, invalid UTF-8, empty,
whitespace-only, 1 MB strings, `[SEP]`/`[CLS]` as text, batches of 0-64, pairs with one side empty) to the
SavedModel's and the TFLite file's `serving_default`. Half the examples go to each export; every example
runs on both runtimes. A row disagrees when its label differs or a probability differs by more than 1e-4.
For each disagreeing row the characters are tokenized one at a time on both runtimes, and those whose ids
differ are reported. Exit status 1 when anything crashed, was malformed or disagreed.
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import json
import os
import pathlib
import sys
import tempfile
import time
import unicodedata
from typing import Any

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np

from tests.export import fuzz_inputs
from tests.export.serving_runtimes import (LABELS, SavedModelRuntime, TfliteRuntime, as_batch,
                                         export_model, tiny_encoder)

PROBABILITY_TOLERANCE = 1e-4
SEQUENCE_LENGTH = 32


@dataclasses.dataclass
class FuzzReport:
    """What a fuzz run tried and found; `ok` when nothing crashed, was malformed or disagreed."""

    inputs: dict[str, int] = dataclasses.field(default_factory=lambda: {"savedmodel": 0, "tflite": 0})
    batches: int = 0
    seconds: dict[str, float] = dataclasses.field(default_factory=lambda: {"savedmodel": 0.0, "tflite": 0.0})
    crashes: list[str] = dataclasses.field(default_factory=list)
    malformed: list[str] = dataclasses.field(default_factory=list)
    mismatched_rows: int = 0
    label_mismatches: int = 0
    max_probability_difference: float = 0.0
    culprits: collections.Counter = dataclasses.field(default_factory=collections.Counter)
    unexplained: list[str] = dataclasses.field(default_factory=list)
    mismatch_examples: list[str] = dataclasses.field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not (self.crashes or self.malformed or self.mismatched_rows)

    def summary(self) -> dict[str, Any]:
        """The report as JSON-ready data; culprits as `U+XXXX NAME` with the disagreeing rows holding them."""
        data = dataclasses.asdict(self)
        data["ok"] = self.ok
        data["culprits"] = [{"unit": describe(u), "kind": kind_of(u), "rows": n}
                            for u, n in self.culprits.most_common()]
        return data


def describe(unit: bytes) -> str:
    """`U+FF0C FULLWIDTH COMMA` for a character, `bytes ff` for invalid UTF-8, `+` between characters."""
    try:
        chars = unit.decode("utf-8")
    except UnicodeDecodeError:
        return " + ".join(describe(u) for u in units(unit)) if len(units(unit)) > 1 else f"bytes {unit.hex()}"
    return " + ".join(f"U+{ord(c):04X} {unicodedata.name(c, '(unnamed)')}" for c in chars)


def kind_of(unit: bytes) -> str:
    """The class of a disagreeing piece: invalid UTF-8, private use, unassigned, NFKC- or case-folded..."""
    try:
        chars = unit.decode("utf-8")
    except UnicodeDecodeError:
        return "invalid UTF-8 byte"
    if len(chars) > 1:
        return "sequence of characters"
    category = unicodedata.category(chars)
    if category in ("Co", "Cn"):
        return {"Co": "private use (Co)", "Cn": "unassigned (Cn)"}[category]
    if unicodedata.normalize("NFKC", chars) != chars:
        return "compatibility character (NFKC changes it)"
    if chars.casefold() != chars.lower():
        return "full case folding differs from lower-casing"
    return "other"


def units(text: bytes) -> list[bytes]:
    """The characters of `text` as UTF-8, each byte of an invalid sequence on its own."""
    return [c.encode("utf-8", "surrogateescape") for c in text.decode("utf-8", "surrogateescape")]


def check_classify(out: dict[str, np.ndarray], batch: int, labels: list[str]) -> list[str]:
    """Problems with one `serving_default` answer of a classifier export (empty when well formed)."""
    problems = []
    shapes = {"probabilities": (batch, len(labels)), "label_id": (batch,), "label": (batch,)}
    for key, shape in shapes.items():
        if key not in out or tuple(out[key].shape) != shape:
            problems.append(f"{key}: shape {None if key not in out else out[key].shape}, expected {shape}")
    if problems:
        return problems
    p, ids = out["probabilities"], out["label_id"]
    if not np.isfinite(p).all():
        problems.append("probabilities not finite")
    elif batch and not np.allclose(p.sum(-1), 1.0, atol=1e-5):
        problems.append(f"probabilities sum to {p.sum(-1).min()}..{p.sum(-1).max()}")
    if ((ids < 0) | (ids >= len(labels))).any():
        problems.append(f"label_id {ids.tolist()} out of range")
    elif batch and (np.take_along_axis(p, ids[:, None], -1)[:, 0] < p.max(-1)).any():
        problems.append(f"label_id {ids.tolist()} is not the most probable class")
    elif [x.decode() if isinstance(x, bytes) else x for x in out["label"]] != [labels[i] for i in ids]:
        problems.append(f"label {out['label'].tolist()} does not name label_id {ids.tolist()}")
    return problems


class ExportFuzzer:
    """Sends batches to both runtimes of one export and records what happens in a `FuzzReport`.

    Args:
        path: the export directory (with `model.tflite`).
        pair: whether `serving_default` takes `text_pair` too.
        report: the report to add to (shared between exports).
        labels: the export's label names.
    """

    def __init__(self, path: pathlib.Path, pair: bool, report: FuzzReport, labels: list[str] = LABELS):
        self.runtimes = [SavedModelRuntime(path), TfliteRuntime(path)]
        self.pair, self.report, self.labels = pair, report, list(labels)
        self.unit_differs: dict[bytes, bool] = {}  # tokenize results per piece, asked once

    def run(self, texts: list[bytes], pairs: list[bytes] | None) -> None:
        """One batch on both runtimes: crashes and malformed answers recorded, then the answers compared."""
        feed = {"text": as_batch(texts)}
        if self.pair:
            feed["text_pair"] = as_batch(pairs)
        answers, malformed = {}, 0
        for runtime in self.runtimes:
            start = time.perf_counter()
            try:
                answers[runtime.name] = runtime("serving_default", **feed)
            except Exception as e:  # a crash is a finding, not the end of the run
                self.report.crashes.append(f"{runtime.name} batch of {len(texts)}: {type(e).__name__}: {e}"[:500])
            self.report.seconds[runtime.name] += time.perf_counter() - start
            self.report.inputs[runtime.name] += len(texts)
            if runtime.name in answers:
                for problem in check_classify(answers[runtime.name], len(texts), self.labels):
                    self.report.malformed.append(f"{runtime.name} batch of {len(texts)}: {problem}")
                    malformed += 1
        self.report.batches += 1
        if len(answers) == 2 and not malformed:
            self.compare(answers["savedmodel"], answers["tflite"], texts, pairs)

    def compare(self, saved: dict[str, np.ndarray], lite: dict[str, np.ndarray], texts: list[bytes],
                pairs: list[bytes] | None) -> None:
        """Counts the rows whose label or probabilities differ, and finds the characters responsible."""
        diff = np.abs(saved["probabilities"] - lite["probabilities"]).max(-1, initial=0.0)
        labels_differ = saved["label_id"] != lite["label_id"]
        bad = np.flatnonzero(labels_differ | (diff > PROBABILITY_TOLERANCE))
        self.report.max_probability_difference = max(self.report.max_probability_difference,
                                                      float(diff.max(initial=0.0)))
        self.report.mismatched_rows += len(bad)
        self.report.label_mismatches += int(labels_differ.sum())
        for row in bad:
            row_units = units(texts[row]) + (units(pairs[row]) if pairs else [])
            culprits = self.differing_units(sorted(set(row_units)))
            for width in (2, 3):  # no character alone: a combining sequence, a control between letters, ...
                if not culprits:
                    culprits = self.differing_units(sorted({b"".join(row_units[i:i + width])
                                                            for i in range(len(row_units) - width + 1)}))
            self.report.culprits.update(culprits)
            shown = repr(texts[row][:120]) + (f" | {pairs[row][:120]!r}" if pairs else "")
            if len(self.report.mismatch_examples) < 20:
                self.report.mismatch_examples.append(f"diff {diff[row]:.2g}: {shown}")
            if not culprits:
                self.report.unexplained.append(shown)

    def differing_units(self, row_units: list[bytes]) -> list[bytes]:
        """The pieces of text (characters, invalid bytes) that the two runtimes' `tokenize` maps apart."""
        if not all("tokenize" in runtime.signatures for runtime in self.runtimes):
            return []  # no per-piece diagnosis; the row is listed as unexplained
        unknown = [u for u in row_units if u not in self.unit_differs]
        if unknown:
            ids = [runtime("tokenize", text=as_batch(unknown)) for runtime in self.runtimes]
            a, b = ids[0]["token_ids"], ids[1]["token_ids"]
            width = max(a.shape[1], b.shape[1])
            a, b = (np.pad(x, [(0, 0), (0, width - x.shape[1])]) for x in (a, b))
            for u, x, y, n, m in zip(unknown, a, b, ids[0]["num_tokens"], ids[1]["num_tokens"]):
                self.unit_differs[u] = bool(n != m or (x != y).any())
        return [u for u in row_units if self.unit_differs[u]]


def build_exports(root: pathlib.Path) -> dict[str, pathlib.Path]:
    """The one-text and the pair classifier exports, with TFLite, over all-MiniLM-L6-v2's vocabulary."""
    import kbert

    tokenizer = kbert.load_tokenizer(kbert.pretrained.minilm_path())
    # A pair classifier is one trained on a second text column; its task names it.
    return {kind: export_model(kbert.BertClassifier(tiny_encoder(tokenizer), len(LABELS), dropout=0.0),
                               tokenizer, root / kind, SEQUENCE_LENGTH,
                               kbert.ClassificationTask(labels=LABELS, text_pair_column=column))
            for kind, column in (("single", None), ("pair", "text_pair"))}


def fuzz(exports: dict[str, pathlib.Path], examples: int, seed: int = 0) -> FuzzReport:
    """Runs `examples` generated inputs, half through each export, on both runtimes."""
    report = FuzzReport()
    for i, (kind, path) in enumerate(sorted(exports.items())):
        fuzzer = ExportFuzzer(path, pair=kind == "pair", report=report)
        share = examples // len(exports) + (i < examples % len(exports))
        for texts, pairs in fuzz_inputs.batches(seed + i, share, pair=kind == "pair"):
            fuzzer.run(texts, pairs)
    return report


def markdown(report: FuzzReport, wall: float) -> str:
    """A markdown table of the counts, and the characters behind the disagreements."""
    rows = [("inputs tried (SavedModel)", report.inputs["savedmodel"]), ("inputs tried (TFLite)",
            report.inputs["tflite"]), ("batches", report.batches), ("crashes", len(report.crashes)),
            ("malformed outputs", len(report.malformed)), ("disagreeing rows", report.mismatched_rows),
            ("of which label differs", report.label_mismatches),
            ("largest probability difference", f"{report.max_probability_difference:.2g}"),
            ("seconds (SavedModel / TFLite / wall)",
             f"{report.seconds['savedmodel']:.1f} / {report.seconds['tflite']:.1f} / {wall:.0f}")]
    lines = ["| | |", "|---|---|"] + [f"| {k} | {v} |" for k, v in rows]
    if report.culprits:
        kinds: dict[str, list[int]] = collections.defaultdict(lambda: [0, 0])
        for unit, rows in report.culprits.items():
            kinds[kind_of(unit)][0] += 1
            kinds[kind_of(unit)][1] += rows
        lines += ["", "| pieces whose ids differ | distinct | in disagreeing rows |", "|---|---|---|"]
        lines += [f"| {k} | {d} | {r} |" for k, (d, r) in sorted(kinds.items(), key=lambda x: -x[1][1])]
        lines += ["", "| most frequent | disagreeing rows holding it |", "|---|---|"]
        lines += [f"| {describe(u)} | {n} |" for u, n in report.culprits.most_common(30)]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Builds the two exports, fuzzes them, prints the tables; 1 on any crash, bad output or disagreement."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--examples", type=int, default=10_000, help="inputs per runtime, split over exports")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=pathlib.Path, default=None, help="write the report as JSON here")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        exports = build_exports(pathlib.Path(tmp))
        built = time.perf_counter() - start
        report = fuzz(exports, args.examples, args.seed)
    wall = time.perf_counter() - start
    print(markdown(report, wall))
    for name, found in (("crash", report.crashes), ("malformed", report.malformed),
                        ("unexplained disagreement", report.unexplained)):
        for line in found[:20]:
            print(f"{name}: {line}")
    summary = dict(report.summary(), examples=args.examples, seed=args.seed, export_seconds=built,
                   wall_seconds=wall)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(summary, indent=2, default=str) + "\n", encoding="utf-8")
    return 0 if report.ok else 1


if __name__ == "__main__":
    sys.exit(main())
