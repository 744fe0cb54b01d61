"""bfloat16 export quality: label agreement and metric change against the float32 export, per task.

    python -m benchmarks.bf16_quality [--tasks sst2,conll,squad] [--work DIR] [--model-dir TASK=DIR ...]

For SST-2 (dev accuracy), CoNLL-2003 (dev entity F1) and SQuAD v1.1 (F1 on dev articles 40-47), a MiniLM
model is fine-tuned briefly (one epoch on a small training subset; or given with --model-dir), exported
twice (`kbert export --precision float32` and `bfloat16`), and both strings-in exports answer the same
dev inputs. Printed per task: the share of inputs whose answer is the same (label; entity set; answer
text) and the metric of each export. Goals: >= 99% agreement, |change| <= 0.5 points. Data from
../shared/data; a task whose files are absent is skipped. Quality figures, not timings: a busy machine
changes only how long it takes (about 20-30 minutes for all three on 2 busy cores).

A tagger needs more than the defaults to tag any entity, and a reader to answer at all; the runs behind
the figures in the change that added this module (dev subsets of 800 inputs):

    python -m benchmarks.bf16_quality --tasks sst2 --dev-rows 800
    python -m benchmarks.bf16_quality --tasks conll --conll-sentences 1500 --epochs 2 --learning-rate 1e-4 \\
        --dev-rows 800
    python -m benchmarks.bf16_quality --tasks squad --squad-articles 2 --epochs 2 --learning-rate 2e-4 --dev-rows 800
"""

from __future__ import annotations

import argparse
import csv
import json
import pathlib
import tempfile
from typing import Any, Callable

import numpy as np

REPO = pathlib.Path(__file__).resolve().parents[1]
DATA = REPO.parent / "shared" / "data"
SST2, CONLL, SQUAD = DATA / "sst2", DATA / "conll2003", DATA / "squad_v1.1" / "dev-v1.1.json"
TASKS = ("sst2", "conll", "squad")


def finetune_model(task: str, args: argparse.Namespace, out: pathlib.Path) -> pathlib.Path:
    """MiniLM fine-tuned briefly (--epochs) on the task's small training subset; returns the model directory."""
    import kbert
    from kbert.tasks import get_task
    from kbert.training.finetune import FinetuneConfig, finetune

    common = dict(out=str(out), init=str(kbert.pretrained.minilm_path()), epochs=args.epochs,
                  learning_rate=args.learning_rate, seed=args.seed, verbose=2,
                  mixed_precision="none")  # trained in float32; the exports differ only in precision
    if task == "sst2":
        config = FinetuneConfig(train=str(SST2 / "train.tsv"), sequence_length=64,
                                max_train_examples=args.sst2_rows, **common)
        finetune(get_task("classify", text_column="sentence", label_column="label"), config)
    elif task == "conll":
        config = FinetuneConfig(train=str(CONLL / "train.txt"), sequence_length=128,
                                max_train_examples=args.conll_sentences, **common)
        finetune(get_task("tag"), config)
    else:
        config = FinetuneConfig(train=str(SQUAD), sequence_length=256, **common)
        finetune(get_task("qa", train_articles=(0, args.squad_articles)), config)
    return out


def batched(fn: Callable, inputs: dict[str, list[str]], size: int = 32) -> dict[str, np.ndarray]:
    """A signature over all `inputs` in batches of `size`; outputs concatenated (columns padded with -1 / "")."""
    import tensorflow as tf

    n = len(next(iter(inputs.values())))
    parts: list[dict[str, np.ndarray]] = []
    for i in range(0, n, size):
        outputs = fn(**{k: tf.constant(v[i:i + size]) for k, v in inputs.items()})
        parts.append({k: v.numpy() for k, v in outputs.items()})
    out = {}
    for key in parts[0]:
        arrays = [p[key] for p in parts]
        if arrays[0].ndim == 2:
            width = max(a.shape[1] for a in arrays)
            fill = b"" if arrays[0].dtype.kind in "SO" else -1
            arrays = [np.pad(a, ((0, 0), (0, width - a.shape[1])), constant_values=fill) for a in arrays]
        out[key] = np.concatenate(arrays)
    return out


def sst2_dev(rows: int | None) -> tuple[dict[str, list[str]], list[int]]:
    with open(SST2 / "dev.tsv", encoding="utf-8") as f:  # shared benchmark data, a local file
        data = [(r["sentence"], int(r["label"])) for r in csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE)]
    data = data[:rows] if rows else data
    return {"text": [d[0] for d in data]}, [d[1] for d in data]


def spans_of(tags: list[str], starts: list[int], ends: list[int]) -> set[tuple[str, int, int]]:
    """Entities (type, first char, end char) of IOB1 or IOB2 tags over words at the given offsets."""
    entities, current = set(), None
    for tag, start, end in zip([*tags, "O"], [*starts, -1], [*ends, -1]):
        kind = tag[2:] if tag[:2] in ("B-", "I-") else None
        if current and (kind != current[0] or tag.startswith("B-")):
            entities.add(tuple(current))
            current = None
        if kind and current is None:
            current = [kind, start, end]
        elif kind:
            current[2] = end
    return entities


def score_sst2(outputs: dict[str, np.ndarray], gold: list[int]) -> tuple[list[Any], float]:
    labels = outputs["label_id"].tolist()
    return labels, 100 * float(np.mean(np.array(labels) == np.array(gold)))


def score_conll(outputs: dict[str, np.ndarray], gold: list[set]) -> tuple[list[Any], float]:
    predicted = []
    for b in range(len(gold)):
        n = int(outputs["num_entities"][b])
        predicted.append({(outputs["entity_type"][b, k].decode(), int(outputs["entity_start"][b, k]),
                           int(outputs["entity_end"][b, k])) for k in range(n)})
    hits = sum(len(p & g) for p, g in zip(predicted, gold))
    guessed, wanted = sum(map(len, predicted)), sum(map(len, gold))
    f1 = 2 * hits / (guessed + wanted) if guessed + wanted else 0.0
    return [sorted(p) for p in predicted], 100 * f1


def score_squad(outputs: dict[str, np.ndarray], examples: list[dict[str, Any]]) -> tuple[list[Any], float]:
    from kbert.metrics import squad_evaluate

    answers = [a.decode("utf-8") for a in outputs["answer"]]
    return answers, squad_evaluate(examples, {e["id"]: a for e, a in zip(examples, answers)})["f1"]


def dev_set(task: str, args: argparse.Namespace) -> tuple[dict[str, list[str]], Any, Callable, str]:
    """(signature inputs, gold, scorer, metric name) of a task's dev set."""
    if task == "sst2":
        inputs, gold = sst2_dev(args.dev_rows)
        return inputs, gold, score_sst2, "accuracy"
    if task == "conll":
        from kbert.tasks.readers.conll import read_conll

        sentences = read_conll(CONLL / "valid.txt")
        sentences = sentences[:args.dev_rows] if args.dev_rows else sentences
        texts, gold = [], []
        for s in sentences:
            starts = np.cumsum([0] + [len(w) + 1 for w in s["words"][:-1]]).tolist()
            texts.append(" ".join(s["words"]))
            gold.append(spans_of(s["tags"], starts, [a + len(w) for a, w in zip(starts, s["words"])]))
        return {"text": texts}, gold, score_conll, "entity F1"
    with open(SQUAD, encoding="utf-8") as f:  # shared benchmark data, a local file
        articles = json.load(f)["data"][40:48]
    examples = [{"id": qa["id"], "question": qa["question"], "context": p["context"], "answers": qa["answers"]}
                for a in articles for p in a["paragraphs"] for qa in p["qas"]]
    examples = examples[:args.dev_rows] if args.dev_rows else examples
    inputs = {"question": [e["question"] for e in examples], "context": [e["context"] for e in examples]}
    return inputs, examples, score_squad, "F1"


def available(task: str) -> bool:
    return {"sst2": SST2 / "train.tsv", "conll": CONLL / "train.txt", "squad": SQUAD}[task].is_file()


def compare(task: str, model_dir: pathlib.Path, work: pathlib.Path, args: argparse.Namespace) -> dict[str, Any]:
    """Exports `model_dir` in both precisions and scores both on the task's dev set."""
    import tensorflow as tf

    from kbert.export import export

    inputs, gold, scorer, metric = dev_set(task, args)
    answers, scores = {}, {}
    for precision in ("float32", "bfloat16"):
        out = export(model_dir, work / f"{task}_{precision}", precision=precision, force=True)
        fn = tf.saved_model.load(str(out)).signatures["serving_default"]
        answers[precision], scores[precision] = scorer(batched(fn, inputs), gold)
    agree = float(np.mean([a == b for a, b in zip(answers["float32"], answers["bfloat16"])]))
    return {"task": task, "metric": metric, "inputs": len(answers["float32"]), "agreement": 100 * agree,
            "float32": scores["float32"], "bfloat16": scores["bfloat16"],
            "change": scores["bfloat16"] - scores["float32"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", default=",".join(TASKS), help="comma-separated: sst2, conll, squad")
    parser.add_argument("--model-dir", action="append", default=[], metavar="TASK=DIR",
                        help="use a fine-tuned model directory instead of fine-tuning (repeatable)")
    parser.add_argument("--work", type=pathlib.Path, default=None,
                        help="where models and exports go (default: a temporary directory)")
    parser.add_argument("--sst2-rows", type=int, default=2000)
    parser.add_argument("--conll-sentences", type=int, default=1000)
    parser.add_argument("--squad-articles", type=int, default=2, help="training articles 0..N of SQuAD dev")
    parser.add_argument("--dev-rows", type=int, default=None, help="score only the first N dev inputs")
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--learning-rate", type=float, default=5e-5,
                        help="CoNLL needs more than one epoch at 5e-5 on 1,000 sentences to tag any entity")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    given = dict(item.split("=", 1) for item in args.model_dir)
    tasks = [t for t in args.tasks.split(",") if t]
    unknown = sorted(set(tasks) - set(TASKS) | set(given) - set(TASKS))
    if unknown:
        parser.error(f"unknown task(s) {unknown}; choose from {TASKS}")
    with tempfile.TemporaryDirectory() as tmp:
        work = args.work or pathlib.Path(tmp)
        rows = []
        for task in tasks:
            if task not in given and not available(task):
                print(f"{task}: data not found under {DATA}; skipped")
                continue
            model_dir = pathlib.Path(given[task]) if task in given else finetune_model(task, args, work / task)
            rows.append(compare(task, model_dir, work, args))
            print(json.dumps(rows[-1]), flush=True)
    print("\n| task | metric | inputs | label agreement | float32 | bfloat16 | change (points) |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['task']} | {r['metric']} | {r['inputs']} | {r['agreement']:.2f}% | {r['float32']:.2f} | "
              f"{r['bfloat16']:.2f} | {r['change']:+.2f} |")


if __name__ == "__main__":
    main()
