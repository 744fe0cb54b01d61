"""BERT embryology with frequency controlled: held-out masked-LM accuracy by word class and frequency band.

Chiang et al. (2020, arXiv:2010.02480) read masked-LM accuracy per part of speech over pretraining
checkpoints. Word classes differ in frequency (determiners are frequent, adjectives are not), so an
early-learned class may only be a frequent one. Here every scored target has a class *and* a frequency
band, and classes are compared inside a band.

- Checkpoints: the `ckpt-*.weights.h5` files of a pretraining run (the recipes keep every one), read into
  the run's final model with `load_weights`. A run in phases (`model_phase1`, ..., then `model`) is read
  phase after phase, and a phase's steps continue from the last step of the one before it.
- Targets: the run's held-out text, masked once with a fixed seed (`kbert.pretraining_data.heldout`,
  the same set `kbert pretrain --heldout-text` scores); only targets shown as [MASK] (not the 10% kept,
  which can be copied, nor the 10% replaced) that are whole words (not a `##` piece and not followed by
  one) are scored. `overall_accuracy` is over all targets, as `kbert pretrain` reports it.
- Class: the word's most frequent Penn tag in the CoNLL-2003 training file, collapsed to coarse
  classes; words CoNLL does not tag are left out.
- Frequency: the word's count in the run's training text, in bands of powers of ten.

    python -m benchmarks.studies.embryology --run runs/q_en --data runs/q_en/data_seq32 --max-instances 8192 \\
        --out notebooks/results/embryology_en.json

A run in phases is best scored at its first phase's length (`--data RUN/data_seq32`): a model trained on
32-token sequences has never used the positions beyond 32, so at 128 its checkpoints would measure that
rather than what it learned; the models of later phases read 32 tokens as well.
"""

from __future__ import annotations

import argparse
import collections
import glob
import json
import math
import pathlib
import re
import sys

REPO = pathlib.Path(__file__).resolve().parents[2]
CONLL = REPO.parent / "shared" / "data" / "conll2003" / "train.txt"

COARSE = {"NN": "noun", "NNS": "noun", "NNP": "proper noun", "NNPS": "proper noun", "VB": "verb", "VBD": "verb",
          "VBG": "verb", "VBN": "verb", "VBP": "verb", "VBZ": "verb", "MD": "verb", "JJ": "adjective",
          "JJR": "adjective", "JJS": "adjective", "RB": "adverb", "RBR": "adverb", "RBS": "adverb",
          "DT": "determiner", "PDT": "determiner", "WDT": "determiner", "IN": "preposition", "TO": "preposition",
          "PRP": "pronoun", "PRP$": "pronoun", "WP": "pronoun", "WP$": "pronoun", "CC": "conjunction",
          "CD": "number", ",": "punctuation", ".": "punctuation", ":": "punctuation", "(": "punctuation",
          ")": "punctuation", '"': "punctuation", "''": "punctuation", "``": "punctuation"}
WORD = re.compile(r"\w+|[^\w\s]")


def word_classes(conll: pathlib.Path) -> dict[str, str]:
    """Lowercased word -> coarse class of its most frequent CoNLL-2003 tag (tags outside COARSE dropped)."""
    tags: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    for line in conll.read_text(encoding="utf-8").splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[0] != "-DOCSTART-":
            tags[parts[0].lower()][parts[1]] += 1
    classes = {}
    for word, counter in tags.items():
        tag = counter.most_common(1)[0][0]
        if tag in COARSE:
            classes[word] = COARSE[tag]
    return classes


def word_counts(files: list[str]) -> collections.Counter:
    """Lowercased word counts of the training text (words and punctuation, as BERT's basic split)."""
    counts: collections.Counter = collections.Counter()
    for name in files:
        with open(name, encoding="utf-8", errors="replace") as f:
            for line in f:
                counts.update(WORD.findall(line.lower()))
    return counts


def band_of(count: int) -> str:
    """Frequency band label, powers of ten: '1e2-1e3' holds counts in [100, 1000)."""
    exponent = int(math.log10(max(count, 1)))
    return f"1e{exponent}-1e{exponent + 1}"


def scored_targets(batches, vocabulary, classes, counts):
    """Per batch: (class, band) of each masked target, or None where it is not scored.

    Only targets the input shows as [MASK] are scored: the 10% shown unchanged can be copied and the 10%
    replaced by a random token are noise, and either would blur what the model predicts from context.
    """
    import numpy as np

    mask_id = vocabulary.index("[MASK]")
    labels = []
    for features in batches:
        ids = features["token_ids"].copy()
        positions, targets, weights = features["masked_positions"], features["masked_ids"], features["masked_weights"]
        shown = np.take_along_axis(ids, positions, axis=1)
        np.put_along_axis(ids, positions, targets, axis=1)  # the original tokens
        batch_labels = np.full(targets.shape, None, dtype=object)
        for row, col in zip(*np.nonzero((weights > 0) & (shown == mask_id))):
            word = vocabulary[targets[row, col]]
            following = vocabulary[ids[row, min(positions[row, col] + 1, ids.shape[1] - 1)]]
            if word.startswith("##") or following.startswith("##") or word not in classes:
                continue
            batch_labels[row, col] = (classes[word], band_of(counts[word]))
        labels.append(batch_labels)
    return labels


def checkpoint_steps(patterns: list[str]) -> list[tuple[str, int]]:
    """(path, step) for the checkpoints of each glob, one glob a phase in training order.

    A phase counts its steps from 0 (`ckpt-500` is its 500th step), so each phase's steps are shifted by
    the steps of the phases before it: the steps of the whole run. A phase's length is the `steps` of the
    `history.json` its run wrote beside `checkpoints/` (a phase of 2,440 steps keeps its last checkpoint at
    2,000), or its last checkpoint's step where there is none (a run stopped before its end).
    """
    found, offset = [], 0
    for pattern in patterns:
        phase = sorted((int(pathlib.Path(p).name[5:].split(".")[0]), p) for p in glob.glob(pattern))
        if not phase:
            raise SystemExit(f"no checkpoint matches {pattern}")
        found += [(path, offset + step) for step, path in phase]
        history = pathlib.Path(phase[-1][1]).parent.parent / "history.json"
        offset += json.loads(history.read_text())["steps"] if history.is_file() else phase[-1][0]
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run", required=True, help="a pretrain_quality output directory (model/, train/, heldout/)")
    parser.add_argument("--checkpoints", nargs="+",
                        help="globs of ckpt-*.weights.h5, one a phase in training order (default: the "
                             "checkpoints of RUN/model_phase1, ..., then RUN/model)")
    parser.add_argument("--heldout-text", help="held-out text (default: RUN/heldout/*.txt)")
    parser.add_argument("--data", help="a create-pretraining-data directory whose sequence length and masking cut "
                                       "the held-out text (default: RUN/data, the last phase's)")
    parser.add_argument("--classes", default=str(CONLL), help="CoNLL-2003 file with POS tags")
    parser.add_argument("--max-instances", type=int, default=2048)
    parser.add_argument("--out", required=True, help="results JSON")
    args = parser.parse_args(argv)

    import numpy as np

    import kbert
    from benchmarks.common.masked_lm_eval import heldout_batches, masked_lm_hits

    run = pathlib.Path(args.run)
    phases = sorted(run.glob("model_phase*"), key=lambda p: int(p.name[len("model_phase"):])) + [run / "model"]
    checkpoints = checkpoint_steps(args.checkpoints or [str(p / "checkpoints" / "ckpt-*.weights.h5") for p in phases])
    if not pathlib.Path(args.classes).is_file():
        raise SystemExit(f"{args.classes} is missing: word classes come from CoNLL-2003's POS column")
    tokenizer = kbert.load_tokenizer(run / "model")
    vocabulary = tokenizer.get_vocabulary()
    classes = word_classes(pathlib.Path(args.classes))
    counts = word_counts(sorted(glob.glob(str(run / "train" / "*.txt"))))
    heldout_files = sorted(glob.glob(args.heldout_text or str(run / "heldout" / "*.txt")))
    batches = heldout_batches(run, heldout_files, args.max_instances, data=args.data and pathlib.Path(args.data))
    labels = scored_targets(batches, vocabulary, classes, counts)

    model = kbert.load_pretrainer(run / "model", objective="none")
    steps, correct_by_step = [], []
    totals: collections.Counter = collections.Counter(x for b in labels for x in b.ravel() if x is not None)
    for path, step in checkpoints:
        model.load_weights(path)
        correct: collections.Counter = collections.Counter()
        right = scored = 0
        for features, batch_labels in zip(batches, labels):
            hits = masked_lm_hits(model, features)
            right += int(hits.sum())
            scored += int(features["masked_weights"].sum())
            for row, col in zip(*np.nonzero(hits)):
                if batch_labels[row, col] is not None:
                    correct[batch_labels[row, col]] += 1
        steps.append(step)
        correct_by_step.append((correct, right / max(scored, 1)))
        print(f"step {steps[-1]}: masked-LM accuracy {right / max(scored, 1):.3f}", flush=True)

    cells = {f"{c}|{b}": {"class": c, "band": b, "targets": n,
                          "accuracy": [correct[(c, b)] / n for correct, _ in correct_by_step]}
             for (c, b), n in sorted(totals.items())}
    scored_words = sum(totals.values())
    results = {"steps": steps, "overall_accuracy": [acc for _, acc in correct_by_step],
               "scored_word_accuracy": [sum(correct.values()) / max(scored_words, 1) for correct, _ in correct_by_step],
               "scored_words": scored_words, "cells": cells,
               "heldout_instances": sum(len(b["token_ids"]) for b in batches), "checkpoints": len(checkpoints),
               "class_source": pathlib.Path(args.classes).name, "run": str(run),
               "max_seq_length": len(batches[0]["token_ids"][0]) if batches else None}
    pathlib.Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    pathlib.Path(args.out).write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {args.out}: {len(cells)} class x band cells over {len(steps)} checkpoints")
    return 0


if __name__ == "__main__":
    sys.exit(main())
