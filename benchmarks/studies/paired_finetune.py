"""Framework or seed? kbert and the PyTorch reference fine-tuned from the same start on the same batches.

`benchmarks.finetune_quality` gives each side its own seeds, so a gap between the two means mixes what the
frameworks do with which rows came first and how the new head was drawn. Here each seed draws one shuffle
of the first `--size` training rows (SST-2 sentences; CoNLL-2003 sentences with `--task conll`; with
`--task pairs`, the question-sentence pairs of `benchmarks.common.pair_task`, articles 0-39, scored on the first
1,000 pairs of articles 40-47 as `benchmarks.finetune_quality` scores them; written as the training file,
read in order by both sides) and one new head (kernel from a normal of std 0.02, as
both draw it; `--truncated-head` cuts it at 2 std as Google's code does; bias 0), and both sides start from
them: only the dropout masks differ, and with `--dropout 0` nothing but float order does. `--kbert-own
shuffle|head` lets kbert make that one draw itself, as `kbert finetune` does, to see which draw moves a
score (`shuffle`: `kbert finetune`'s default batches, grouped by length; `random-shuffle`: the plain
random batches of `--no-group-by-length`). `--head-from kbert` gives both sides the head kbert draws
itself (the kbert side as with `--kbert-own head`), to tell an unlucky set of heads from a framework
that does worse with its own. Each side runs in its own process (kbert: the task model through the
library as `kbert finetune` builds it; reference: `python -m benchmarks.common.hf_reference classify|tag
--no-shuffle --head-init`).

Per seed it prints the dev score on each side (SST-2 accuracy; CoNLL-2003 entity F1 on its test file, both
scored by `kbert.metrics.entity_scores`), the loss of step 1 on each side (same weights and batch: they
must agree, and with dropout 0 to float precision) and the mean absolute difference of the two loss
curves; then the mean and spread of the paired differences.

    python -m benchmarks.studies.paired_finetune --size 2000 --seeds 0 1 2 3 4 5 --json paired.json
    python -m benchmarks.studies.paired_finetune --size 2000 --seeds 0 1 2 --dropout 0 --json paired_nodrop.json
    python -m benchmarks.studies.paired_finetune --task conll --size 5000 --seeds 0 1 2 --truncated-head
    python -m benchmarks.studies.paired_finetune --task conll --size 5000 --seeds 0 1 2 --truncated-head --kbert-own shuffle
    python -m benchmarks.studies.paired_finetune --task pairs --size 2000 --seeds 0 1 2 3 4 5
    python -m benchmarks.studies.paired_finetune --size 500 --seeds 0 1 2 3 4 5 6 7 8 9 --kbert-own random-shuffle
    python -m benchmarks.studies.paired_finetune --size 500 --seeds 0 1 2 3 4 5 6 7 8 9 --head-from kbert
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile

import numpy as np

from benchmarks.common.pair_task import pair_files

REPO = pathlib.Path(__file__).resolve().parents[2]
DATA = REPO.parent / "shared" / "data"
SQUAD = DATA / "squad_v1.1/dev-v1.1.json"
# task: (training file, dev file, sequence length, text columns: (text, pair) for classification, None for
# tagging); the pair task's files are written from SQUAD by `pair_files`
TASKS = {
    "sst2": (DATA / "sst2/train.tsv", DATA / "sst2/dev.tsv", 64, ("sentence", None)),
    "conll": (DATA / "conll2003/train.txt", DATA / "conll2003/test.txt", 128, None),
    "pairs": (SQUAD, SQUAD, 128, ("question", "sentence")),
}
def write_inputs(task: str, source: pathlib.Path, size: int, seed: int, hidden: int, work: pathlib.Path,
                 truncated: bool = False) -> tuple[pathlib.Path, pathlib.Path]:
    """The seed's shuffle of the first `size` rows of `source` (TSV rows or CoNLL sentences), and its
    starting head, in `work`; returns their paths."""
    rng = np.random.default_rng(seed)
    if task != "conll":  # one TSV row an example
        with open(source, encoding="utf-8", newline="") as handle:
            reader = csv.reader(handle, delimiter="\t", quoting=csv.QUOTE_NONE)
            header, rows = next(reader), list(reader)[:size]
        labels = ["0", "1"]
        order = rng.permutation(len(rows))
        train = work / "train.tsv"
        # the rows as read, quotes and all (csv's writer wants an escape character for a '"')
        train.write_text("".join("\t".join(row) + "\n" for row in [header, *(rows[i] for i in order)]),
                         encoding="utf-8")
    else:
        from benchmarks.common.hf_reference import read_conll

        sentences = read_conll(str(source), size)
        labels = sorted({t for _, tags in sentences for t in tags})
        order = rng.permutation(len(sentences))
        train = work / "train.txt"
        train.write_text("".join("".join(f"{w} _ _ {t}\n" for w, t in zip(*sentences[i])) + "\n" for i in order),
                         encoding="utf-8")
    kernel = rng.standard_normal((hidden, len(labels)))
    while truncated and (outside := np.abs(kernel) > 2).any():  # cut at 2 std: redraw what falls outside
        kernel[outside] = rng.standard_normal(int(outside.sum()))
    head = work / "head.npz"
    np.savez(head, kernel=(0.02 * kernel).astype(np.float32), bias=np.zeros(len(labels), np.float32),
             labels=np.array(labels))
    return train, head


def kbert_side(args: argparse.Namespace) -> None:
    """One kbert run on the file's order and the given head; writes OUT/metrics.json."""
    import keras

    from kbert.convert.checkpoints import load_pretrained
    from kbert.tasks import ClassificationTask, TaggingTask
    from kbert.tasks.classification_data import classification_dataset
    from kbert.tasks.tagging_data import tagging_dataset
    from kbert.text import BertPreprocessor, load_tokenizer
    from kbert.optim import create_optimizer

    keras.utils.set_random_seed(args.seed)
    if args.task == "conll":
        task = TaggingTask()
    else:
        text, pair = TASKS[args.task][3]
        task = ClassificationTask(text_column=text, text_pair_column=pair, label_column="label")
    train = task.read_examples(args.train)
    task = task.prepare(args.train, train)
    dev = task.read_examples(args.validation, split="validation")
    rates = {} if args.dropout is None else {"hidden_dropout_prob": args.dropout,
                                             "attention_probs_dropout_prob": args.dropout}
    encoder = load_pretrained(args.init, **rates)
    preprocessor = BertPreprocessor(load_tokenizer(args.init), args.sequence_length, padding="dynamic")
    in_order = tagging_dataset if args.task == "conll" else classification_dataset
    own = args.kbert_own or ""  # the draws kbert makes itself (as `kbert finetune` does) instead of sharing
    data = in_order(train, preprocessor, task.labels, batch_size=args.batch_size, shuffle=own.endswith("shuffle"),
                    seed=args.seed, group_by_length=own != "random-shuffle")
    model = task.build_model(encoder, dropout=0.1 if args.dropout is None else args.dropout)
    if own != "head":
        head = np.load(args.head_init)
        columns = [list(head["labels"]).index(name) for name in task.labels]  # the head's columns, kbert's order
        model.output_dense.set_weights([head["kernel"][:, columns], head["bias"][columns]])
    elif args.write_head:  # the head kbert drew, for the reference to start from (--head-from kbert)
        kernel, bias = model.output_dense.get_weights()
        np.savez(args.write_head, kernel=kernel, bias=bias, labels=np.array(task.labels))
    steps = math.ceil(len(train) / args.batch_size)
    model.compile(optimizer=create_optimizer(args.learning_rate, steps, int(0.1 * steps), weight_decay=0.01))

    # Keras logs the running mean of the loss weighted by batch size; this recovers each step's loss.
    losses, running = [], [0.0]

    class StepLoss(keras.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            seen = min((batch + 1) * args.batch_size, len(train))
            total = float(logs["loss"]) * seen
            losses.append((total - running[0]) / (seen - batch * args.batch_size))
            running[0] = total

    model.fit(data, epochs=1, verbose=0, callbacks=[StepLoss()], shuffle=False)
    metrics = task.evaluate(model, dev, preprocessor, batch_size=64, verbose=0)
    pathlib.Path(args.out).mkdir(parents=True, exist_ok=True)
    (pathlib.Path(args.out) / "metrics.json").write_text(json.dumps({**metrics, "losses": losses}) + "\n")


def reference_task(columns: tuple[str, str | None] | None) -> list[str]:
    """`benchmarks.common.hf_reference`'s subcommand and column flags for a task's `TASKS` columns."""
    if columns is None:
        return ["tag"]
    text, pair = columns
    return ["classify", "--text-column", text, *(["--text-pair-column", pair] if pair else []),
            "--label-column", "label"]


def run_pair(args: argparse.Namespace, seed: int, work: pathlib.Path) -> dict:
    source, dev, length, columns = TASKS[args.task]
    if args.task == "pairs":
        source, dev = args.pair_train, args.pair_dev
    hidden = json.loads((pathlib.Path(args.init) / "config.json").read_text())["hidden_size"]  # HF's layout
    train, head = write_inputs(args.task, source, args.size, seed, hidden=hidden, work=work,
                               truncated=args.truncated_head)
    common = ["--init", str(args.init), "--train", str(train), "--validation", str(dev),
              "--sequence-length", str(length), "--batch-size", "32", "--learning-rate", str(args.learning_rate),
              "--seed", str(seed)]
    common += [] if args.dropout is None else ["--dropout", str(args.dropout)]
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
    kbert_flags = ([] if args.kbert_own is None else ["--kbert-own", args.kbert_own]) + ["--head-init", str(head)]
    reference_head = ["--head-init", str(head)]
    if args.head_from == "kbert":  # kbert draws its head and writes it; the reference starts from it
        kbert_head = work / "kbert_head.npz"
        kbert_flags = ["--kbert-own", "head", "--write-head", str(kbert_head)]
        reference_head = ["--head-init", str(kbert_head)]
    sides = {
        "kbert": [sys.executable, "-m", "benchmarks.studies.paired_finetune", "--kbert-side", "--task", args.task,
                  *common, *kbert_flags, "--out", str(work / "kbert")],
        "reference": [sys.executable, "-m", "benchmarks.common.hf_reference", *reference_task(columns), *common,
                      *reference_head, "--epochs", "1", "--no-shuffle", "--out", str(work / "reference")],
    }
    result = {"seed": seed}
    for name, command in sides.items():
        subprocess.run(command, cwd=REPO, env=env, check=True, stdout=subprocess.DEVNULL)
        metrics = json.loads((work / name / "metrics.json").read_text())
        result[name] = {"score": 100 * metrics["accuracy"], "losses": metrics["losses"]}
    if args.task == "conll":  # entity F1, both sides scored by the same function
        from benchmarks.common.hf_reference import read_conll
        from kbert.metrics import entity_scores

        gold = [tags for _, tags in read_conll(str(dev), None)]
        result["kbert"]["score"] = 100 * json.loads((work / "kbert" / "metrics.json").read_text())["f1"]
        guess = json.loads((work / "reference" / "predictions.json").read_text())
        result["reference"]["score"] = 100 * entity_scores(gold, guess)["f1"]
    k, r = result["kbert"]["losses"], result["reference"]["losses"]
    result["first_loss"] = [k[0], r[0]]
    result["mean_abs_loss_difference"] = float(np.mean(np.abs(np.subtract(k, r))))
    result["score_difference"] = result["kbert"]["score"] - result["reference"]["score"]
    return result


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kbert-side", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--task", choices=sorted(TASKS), default="sst2",
                        help="sst2 (accuracy on dev), conll (CoNLL-2003 NER, entity F1 on test) or pairs "
                             "(SQuAD question-sentence pairs, accuracy)")
    parser.add_argument("--size", type=int, default=2000, help="first N training rows (sentences)")
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--dropout", type=float, help="every dropout rate on both sides (default: 0.1)")
    parser.add_argument("--learning-rate", type=float, default=5e-5)
    parser.add_argument("--kbert-own", choices=["shuffle", "random-shuffle", "head"],
                        help="kbert makes this draw itself (its batches from tf.data's shuffle of the rows: grouped "
                             "by length as `kbert finetune` makes them, or random; or Keras' head), the reference "
                             "keeps the shared one: which draw moves the score")
    parser.add_argument("--head-from", choices=["harness", "kbert"], default="harness",
                        help="the shared head: drawn here (default), or the one kbert draws itself")
    parser.add_argument("--truncated-head", action="store_true",
                        help="draw the head from a normal cut at 2 std (Google's initialiser; kbert's before)")
    parser.add_argument("--init", help="a Hugging Face BERT directory both sides load (default: all-MiniLM-L6-v2)")
    parser.add_argument("--json", help="write every pair here")
    # --kbert-side: the flags hf_reference takes
    for flag in ("--train", "--validation", "--head-init", "--out", "--write-head"):
        parser.add_argument(flag)
    for flag in ("--sequence-length", "--batch-size", "--seed"):
        parser.add_argument(flag, type=int)
    args = parser.parse_args(argv)
    if args.head_from == "kbert" and (args.kbert_own is not None or args.truncated_head):
        parser.error("--head-from kbert shares kbert's own head: no --kbert-own or --truncated-head with it")
    if args.kbert_side:
        return kbert_side(args)
    if not TASKS[args.task][0].is_file():
        raise SystemExit(f"needs {TASKS[args.task][0]}")
    if args.init is None:
        import kbert.pretrained

        args.init = kbert.pretrained.minilm_path()
    pairs = []
    with tempfile.TemporaryDirectory(prefix="kbert-paired-files-") as files:
        if args.task == "pairs":
            args.pair_train, args.pair_dev = pair_files(TASKS["pairs"][0], pathlib.Path(files))
        for seed in args.seeds:
            with tempfile.TemporaryDirectory(prefix="kbert-paired-") as work:
                pairs.append(run_pair(args, seed, pathlib.Path(work)))
            p = pairs[-1]
            print(f"seed {seed}: kbert {p['kbert']['score']:.2f} reference {p['reference']['score']:.2f} "
                  f"(difference {p['score_difference']:+.2f}); step-1 loss {p['first_loss'][0]:.5f} / "
                  f"{p['first_loss'][1]:.5f}; mean |loss difference| {p['mean_abs_loss_difference']:.2e}",
                  flush=True)
            if args.json:
                pathlib.Path(args.json).write_text(json.dumps(pairs, indent=1) + "\n")
    differences = [p["score_difference"] for p in pairs]
    for name in ("kbert", "reference"):
        scores = [p[name]["score"] for p in pairs]
        spread = statistics.stdev(scores) if len(scores) > 1 else 0.0
        print(f"{name}: {statistics.mean(scores):.2f} ± {spread:.2f}")
    spread = statistics.stdev(differences) if len(differences) > 1 else 0.0
    print(f"kbert - reference, paired: {statistics.mean(differences):+.2f} ± {spread:.2f} over {len(pairs)} seeds")


if __name__ == "__main__":
    main()
