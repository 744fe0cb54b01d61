"""Framework or seed? kbert and the PyTorch reference fine-tuned from the same start on the same batches.

`benchmarks.finetune_quality` gives each side its own seeds, so a gap between the two means mixes what the
frameworks do with which rows came first and how the new head was drawn. Here each seed draws one shuffle
of the first `--size` SST-2 training rows (written as the training file, read in order by both sides) and
one classifier head (kernel from a normal of std 0.02 cut at 2 std, as kbert draws it; bias 0), and both
sides start from them: only the dropout masks differ, and with `--dropout 0` nothing but float order does.
Each side runs in its own process (kbert: `BertClassifier` through the library as `kbert finetune` builds
it; reference: `python -m benchmarks.hf_reference classify --no-shuffle --head-init`).

Per seed it prints dev accuracy on each side, the loss of step 1 on each side (same weights and batch:
they must agree, and with dropout 0 to float precision) and the mean absolute difference of the two loss
curves; then the mean and spread of the paired differences.

    python -m benchmarks.paired_finetune --size 2000 --seeds 0 1 2 3 4 5 --json paired.json
    python -m benchmarks.paired_finetune --size 2000 --seeds 0 1 2 --dropout 0 --json paired_nodrop.json
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

REPO = pathlib.Path(__file__).resolve().parents[1]
SST2 = REPO.parent / "shared" / "data" / "sst2"


def write_inputs(source: pathlib.Path, size: int, seed: int, hidden: int, classes: int,
                 work: pathlib.Path) -> tuple[pathlib.Path, pathlib.Path]:
    """The seed's shuffle of the first `size` rows of the TSV `source`, and its starting head, in `work`;
    returns their paths."""
    with open(source, encoding="utf-8", newline="") as handle:
        reader = csv.reader(handle, delimiter="\t", quoting=csv.QUOTE_NONE)
        header, rows = next(reader), list(reader)[:size]
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(rows))
    train = work / "train.tsv"
    with open(train, "w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle, delimiter="\t", quoting=csv.QUOTE_NONE, lineterminator="\n")
        writer.writerows([header, *(rows[i] for i in order)])
    kernel = rng.standard_normal((hidden, classes))
    while (outside := np.abs(kernel) > 2).any():  # truncated at 2 std: redraw what falls outside
        kernel[outside] = rng.standard_normal(int(outside.sum()))
    head = work / "head.npz"
    np.savez(head, kernel=(0.02 * kernel).astype(np.float32), bias=np.zeros(classes, np.float32))
    return train, head


def kbert_side(args: argparse.Namespace) -> None:
    """One kbert run on the file's order and the given head; writes OUT/metrics.json."""
    import keras

    from kbert.convert.checkpoints import load_pretrained
    from kbert.tasks import ClassificationTask
    from kbert.tasks.classification_data import classification_dataset
    from kbert.text import BertPreprocessor, load_tokenizer
    from kbert.training.optimizers import create_optimizer

    keras.utils.set_random_seed(args.seed)
    task = ClassificationTask(text_column="sentence", label_column="label")
    train = task.read_examples(args.train, None, None)
    task = task.prepare(args.train, train)
    dev = task.read_examples(args.validation, None, None)
    rates = {} if args.dropout is None else {"hidden_dropout_prob": args.dropout,
                                             "attention_probs_dropout_prob": args.dropout}
    encoder = load_pretrained(args.init, **rates)
    preprocessor = BertPreprocessor(load_tokenizer(args.init), args.sequence_length, padding="dynamic")
    data = classification_dataset(train, preprocessor, task.labels, batch_size=args.batch_size, shuffle=False)
    model = task.build_model(encoder, dropout=0.1 if args.dropout is None else args.dropout)
    head = np.load(args.head_init)
    model.output_dense.set_weights([head["kernel"], head["bias"]])
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


def run_pair(args: argparse.Namespace, seed: int, work: pathlib.Path) -> dict:
    hidden = json.loads((pathlib.Path(args.init) / "config.json").read_text())["hidden_size"]  # HF's layout
    train, head = write_inputs(SST2 / "train.tsv", args.size, seed, hidden=hidden, classes=2, work=work)
    common = ["--init", str(args.init), "--train", str(train), "--validation", str(SST2 / "dev.tsv"),
              "--sequence-length", "64", "--batch-size", "32", "--learning-rate", str(args.learning_rate),
              "--seed", str(seed), "--head-init", str(head)]
    common += [] if args.dropout is None else ["--dropout", str(args.dropout)]
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
    sides = {
        "kbert": [sys.executable, "-m", "benchmarks.paired_finetune", "--kbert-side", *common,
                  "--out", str(work / "kbert")],
        "reference": [sys.executable, "-m", "benchmarks.hf_reference", "classify", *common, "--epochs", "1",
                      "--no-shuffle", "--text-column", "sentence", "--label-column", "label",
                      "--out", str(work / "reference")],
    }
    result = {"seed": seed}
    for name, command in sides.items():
        subprocess.run(command, cwd=REPO, env=env, check=True, stdout=subprocess.DEVNULL)
        metrics = json.loads((work / name / "metrics.json").read_text())
        result[name] = {"accuracy": 100 * metrics["accuracy"], "losses": metrics["losses"]}
    k, r = result["kbert"]["losses"], result["reference"]["losses"]
    result["first_loss"] = [k[0], r[0]]
    result["mean_abs_loss_difference"] = float(np.mean(np.abs(np.subtract(k, r))))
    result["accuracy_difference"] = result["kbert"]["accuracy"] - result["reference"]["accuracy"]
    return result


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kbert-side", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--size", type=int, default=2000, help="first N SST-2 training rows")
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--dropout", type=float, help="every dropout rate on both sides (default: 0.1)")
    parser.add_argument("--learning-rate", type=float, default=5e-5)
    parser.add_argument("--init", help="a Hugging Face BERT directory both sides load (default: all-MiniLM-L6-v2)")
    parser.add_argument("--json", help="write every pair here")
    # --kbert-side: the flags hf_reference takes
    for flag in ("--train", "--validation", "--head-init", "--out"):
        parser.add_argument(flag)
    for flag in ("--sequence-length", "--batch-size", "--seed"):
        parser.add_argument(flag, type=int)
    args = parser.parse_args(argv)
    if args.kbert_side:
        return kbert_side(args)
    if not (SST2 / "train.tsv").is_file():
        raise SystemExit(f"needs SST-2 at {SST2}")
    if args.init is None:
        import kbert.pretrained

        args.init = kbert.pretrained.minilm_path()
    pairs = []
    for seed in args.seeds:
        with tempfile.TemporaryDirectory(prefix="kbert-paired-") as work:
            pairs.append(run_pair(args, seed, pathlib.Path(work)))
        p = pairs[-1]
        print(f"seed {seed}: kbert {p['kbert']['accuracy']:.2f} reference {p['reference']['accuracy']:.2f} "
              f"(difference {p['accuracy_difference']:+.2f}); step-1 loss {p['first_loss'][0]:.5f} / "
              f"{p['first_loss'][1]:.5f}; mean |loss difference| {p['mean_abs_loss_difference']:.2e}", flush=True)
        if args.json:
            pathlib.Path(args.json).write_text(json.dumps(pairs, indent=1) + "\n")
    differences = [p["accuracy_difference"] for p in pairs]
    for name in ("kbert", "reference"):
        scores = [p[name]["accuracy"] for p in pairs]
        spread = statistics.stdev(scores) if len(scores) > 1 else 0.0
        print(f"{name}: {statistics.mean(scores):.2f} ± {spread:.2f}")
    spread = statistics.stdev(differences) if len(differences) > 1 else 0.0
    print(f"kbert - reference, paired: {statistics.mean(differences):+.2f} ± {spread:.2f} over {len(pairs)} seeds")


if __name__ == "__main__":
    main()
