"""Whose draws? kbert's batch order and new head against the reference's, all trained by one loop.

At 500 SST-2 rows `benchmarks.finetune_quality` finds kbert below the reference over 40 seeds, while
`benchmarks.studies.paired_finetune` finds the two loops equal from a shared start. What is left is what each
program draws from its seed: the order of the rows (`kbert finetune`: tf.data's shuffle in its pipeline;
the reference: Python's `random.shuffle`) and the new head (kbert: Keras' initialiser after the encoder
loads; the reference: PyTorch's, inside `from_pretrained`). `write` draws both for every seed exactly as
each program does (kbert's order is checked against the batches its pipeline yields); `train` fine-tunes
every seed four times with the reference's loop (`benchmarks.common.hf_reference.train`, BERT's recipe):

- reference: the reference's order and head (what `benchmarks.common.hf_reference` trains on);
- kbert: kbert's order and head (what `kbert finetune` trains on);
- kbert-order: kbert's order, the reference's head; kbert-head: the reference's order, kbert's head.

A gap between arms is then the draws' alone. The dropout masks come from `torch.manual_seed(seed)`
before training, alike in every arm. Hundreds of seeds an arm are minutes on a GPU, so `write` packs what
`train` needs: token ids (the reference's tokenizer), labels, the draws, and all-MiniLM-L6-v2 with its
word embeddings cut to the tokens the rows use (rows no batch reads change nothing; the pack stays small
enough to travel).

    python -m benchmarks.studies.draw_laws write --seeds 400 --pack runs/draws/pack    # TF + torch, on CPU
    python -m benchmarks.studies.draw_laws train --pack runs/draws/pack --device cuda --out arms.jsonl
    python -m benchmarks.studies.draw_laws report arms*.jsonl --finetune-quality runs.json
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import io
import json
import pathlib
import statistics
import sys
import time

import numpy as np

REPO = pathlib.Path(__file__).resolve().parents[2]
DATA = REPO.parent / "shared" / "data"
SEQUENCE_LENGTH, BATCH_SIZE, LEARNING_RATE = 64, 32, 5e-5
ARMS = {  # arm: (whose order, whose head)
    "reference": ("reference", "reference"),
    "kbert": ("kbert", "kbert"),
    "kbert-order": ("kbert", "reference"),
    "kbert-head": ("reference", "kbert"),
}
TAKEOFF = 56.0  # accuracy (points) past which a run has left the majority-class plateau


def kbert_draws(init: str, train: str, size: int, seeds: list[int]) -> dict[str, np.ndarray]:
    """Each seed's batch order and head as `kbert finetune classify` draws them (kbert.training.finetune:
    seed, read, encoder, pipeline, model, in that order); the order is checked against the pipeline's
    labels and lengths, batch by batch."""
    import keras

    from kbert.convert.checkpoints import load_pretrained
    from kbert.data_pipeline import index_batches
    from kbert.tasks import ClassificationTask
    from kbert.text import BertPreprocessor, load_tokenizer

    task = ClassificationTask(text_column="sentence", label_column="label")
    examples = task.read_examples(train, size)
    task = task.prepare(train, examples)
    wanted = np.array([task.labels.index(e["label"]) for e in examples])
    tokenizer = load_tokenizer(init)  # token counts, to check the pipeline's batches against
    lengths = np.array([len(tokenizer.tokenize(e["text"]).numpy()) for e in examples])
    orders, kernels = [], []
    for seed in seeds:
        keras.backend.clear_session()
        keras.utils.set_random_seed(seed)  # reading the data draws nothing: on to the encoder
        encoder = load_pretrained(init)
        preprocessor = BertPreprocessor(load_tokenizer(init), SEQUENCE_LENGTH, padding="dynamic")
        data = task.dataset(examples, preprocessor, BATCH_SIZE, training=True, seed=seed, group_by_length=True)
        model = task.build_model(encoder, dropout=0.1)
        kernel, bias = model.output_dense.get_weights()
        if np.any(bias):
            raise AssertionError("kbert's new head has a nonzero bias")
        # The pipeline's index batches for this seed (one run of examples: plain shuffled batches).
        batches = index_batches(len(examples), BATCH_SIZE, shuffle=True, seed=seed)
        order = np.concatenate([b.numpy() for b in batches])
        start = 0
        for inputs, batch_labels in data.dataset:
            rows = order[start:start + len(batch_labels)]
            used = inputs["padding_mask"].numpy().sum(1) - 2  # less [CLS] and [SEP]
            expected = lengths[rows].clip(max=SEQUENCE_LENGTH - 2)
            if (batch_labels.numpy() != wanted[rows]).any() or (used != expected).any():
                raise AssertionError(f"seed {seed}: the order drawn here is not the pipeline's")
            start += len(batch_labels)
        orders.append(order)
        kernels.append(kernel)
        print(f"kbert seed {seed}", flush=True)
    return {"kbert_order": np.stack(orders), "kbert_head": np.stack(kernels), "kbert_labels": np.array(task.labels)}


def reference_draws(init: str, size: int, seeds: list[int]) -> dict[str, np.ndarray]:
    """Each seed's batch order and head as `benchmarks.common.hf_reference classify` draws them (seed, then
    `from_pretrained`, whose new classifier takes PyTorch's first draws)."""
    import torch
    from transformers import BertForSequenceClassification
    from transformers.utils import logging

    from benchmarks.common.hf_reference import shuffled_batches

    logging.set_verbosity_error()
    orders, kernels = [], []
    for seed in seeds:
        torch.manual_seed(seed)
        model = BertForSequenceClassification.from_pretrained(init, num_labels=2)
        kernels.append(model.classifier.weight.detach().numpy().T.copy())
        if model.classifier.bias.detach().abs().sum() != 0:
            raise AssertionError("the reference's new head has a nonzero bias")
        orders.append(np.concatenate(shuffled_batches(size, BATCH_SIZE, seed)))
    return {"reference_order": np.stack(orders), "reference_head": np.stack(kernels)}


def write(args: argparse.Namespace) -> None:
    from safetensors.numpy import load_file, save_file
    from transformers import BertTokenizerFast

    from benchmarks.common.hf_reference import read_tsv

    import kbert.pretrained
    from kbert.data_pipeline import GROUP_WINDOW

    init = args.init or kbert.pretrained.minilm_path()
    if args.size > GROUP_WINDOW * BATCH_SIZE:  # kbert_draws reads the order of an ungrouped epoch
        raise SystemExit(f"--size at most {GROUP_WINDOW * BATCH_SIZE}: larger epochs are grouped by length")
    pack = pathlib.Path(args.pack)
    pack.mkdir(parents=True, exist_ok=True)
    seeds = list(range(args.first_seed, args.first_seed + args.seeds))
    tokenizer = BertTokenizerFast.from_pretrained(init)
    rows = {"train": read_tsv(args.train, "sentence", None, "label", args.size),
            "dev": read_tsv(args.validation, "sentence", None, "label", None)}
    labels = sorted({row[2] for row in rows["train"]})  # the reference's label order
    ids = {part: tokenizer([r[0] for r in part_rows], truncation=True, max_length=SEQUENCE_LENGTH)["input_ids"]
           for part, part_rows in rows.items()}
    vocabulary = sorted({tokenizer.pad_token_id, *(i for part in ids.values() for seq in part for i in seq)})
    if vocabulary[0] != tokenizer.pad_token_id:
        raise AssertionError("the pack keeps [PAD] at id 0")
    new_id = {old: new for new, old in enumerate(vocabulary)}
    arrays: dict[str, np.ndarray] = {}
    for part, sequences in ids.items():
        width = max(map(len, sequences))
        arrays[f"{part}_ids"] = np.array([[new_id[i] for i in s] + [0] * (width - len(s)) for s in sequences],
                                         np.int32)
        arrays[f"{part}_lengths"] = np.array([len(s) for s in sequences], np.int32)
        arrays[f"{part}_labels"] = np.array([labels.index(r[2]) for r in rows[part]], np.int32)
    weights = load_file(str(pathlib.Path(init) / "model.safetensors"))
    weights.pop("embeddings.position_ids", None)
    weights["embeddings.word_embeddings.weight"] = weights["embeddings.word_embeddings.weight"][vocabulary]
    save_file({f"bert.{k}": np.ascontiguousarray(v) for k, v in weights.items()}, str(pack / "model.safetensors"))
    config = json.loads((pathlib.Path(init) / "config.json").read_text())
    (pack / "config.json").write_text(json.dumps({**config, "vocab_size": len(vocabulary)}, indent=1) + "\n")

    draws = {**reference_draws(init, args.size, seeds), **kbert_draws(init, args.train, args.size, seeds)}
    kbert_labels = list(draws.pop("kbert_labels"))
    columns = [kbert_labels.index(name) for name in labels]  # kbert's columns, in this order
    draws["kbert_head"] = draws["kbert_head"][:, :, columns]
    np.savez(pack / "draws.npz", seeds=np.array(seeds), labels=np.array(labels), **arrays, **draws)
    print(f"wrote {pack}: {len(seeds)} seeds, {len(vocabulary)} of {tokenizer.vocab_size} tokens")


def train(args: argparse.Namespace) -> None:
    import torch
    from safetensors.torch import load_file
    from transformers import BertConfig, BertForSequenceClassification

    from benchmarks.common.hf_reference import train as reference_train

    torch.backends.cuda.matmul.allow_tf32 = False  # float32 products, as on the CPU
    torch.backends.cudnn.allow_tf32 = False
    pack = pathlib.Path(args.pack)
    draws = dict(np.load(pack / "draws.npz"))  # read once: an npz file reads an array at every lookup
    config = BertConfig.from_dict(json.loads((pack / "config.json").read_text()))
    if args.dropout is not None:
        config.hidden_dropout_prob = config.attention_probs_dropout_prob = args.dropout
    config.num_labels = len(draws["labels"])
    device = torch.device(args.device)
    model = BertForSequenceClassification(config).to(device)
    start = {k: v.to(device) for k, v in load_file(str(pack / "model.safetensors")).items()}
    missing = set(model.state_dict()) - set(start) - {"bert.embeddings.position_ids", "bert.embeddings.token_type_ids"}
    if missing != {"classifier.weight", "classifier.bias"}:
        raise AssertionError(f"the pack does not cover the encoder: {sorted(missing)}")

    def batch(part: str, rows: np.ndarray) -> dict:
        width = int(draws[f"{part}_lengths"][rows].max())
        ids = torch.from_numpy(draws[f"{part}_ids"][rows, :width]).long().to(device)
        return {"input_ids": ids, "attention_mask": (ids != 0).long(), "token_type_ids": torch.zeros_like(ids),
                "labels": torch.from_numpy(draws[f"{part}_labels"][rows]).long().to(device)}

    recipe = argparse.Namespace(learning_rate=LEARNING_RATE, weight_decay=0.01, warmup_ratio=0.1, epochs=1)
    positions = range(args.worker, len(draws["seeds"]), args.workers)
    arms = args.arms or list(ARMS)
    deadline = time.monotonic() + args.seconds if args.seconds else None
    with open(args.out, "a", encoding="utf-8") as out:
        for index, position in enumerate(positions):
            if deadline is not None and time.monotonic() > deadline:
                break
            seed = int(draws["seeds"][position])
            for arm in arms:
                whose_order, whose_head = ARMS[arm]
                order = draws[f"{whose_order}_order"][position]
                model.load_state_dict(start, strict=False)
                with torch.no_grad():
                    model.classifier.weight.copy_(torch.from_numpy(draws[f"{whose_head}_head"][position].T))
                    model.classifier.bias.zero_()
                torch.manual_seed(seed)  # the dropout masks
                batches = [batch("train", order[i:i + BATCH_SIZE]) for i in range(0, len(order), BATCH_SIZE)]
                with contextlib.redirect_stdout(io.StringIO()):  # its per-step progress lines
                    losses = reference_train(model, lambda epoch: iter(batches), recipe)["losses"]
                correct = 0
                with torch.no_grad():
                    for i in range(0, len(draws["dev_labels"]), 128):
                        inputs = batch("dev", np.arange(i, min(i + 128, len(draws["dev_labels"]))))
                        labels = inputs.pop("labels")
                        correct += int((model(**inputs).logits.argmax(-1) == labels).sum())
                score = 100 * correct / len(draws["dev_labels"])
                out.write(json.dumps({"seed": seed, "arm": arm, "score": score, "first_loss": losses[0],
                                      "device": args.device, "dropout": args.dropout}) + "\n")
                out.flush()
            print(f"seed {seed} done ({index + 1}/{len(positions)})", flush=True)


def report(args: argparse.Namespace) -> None:
    """The arms' table; with `--finetune-quality`, each program's own runs against this loop on the same
    draws (`kbert finetune` against the kbert arm, `benchmarks.common.hf_reference` against the reference arm)."""
    from benchmarks.common.seed_spread import p_text, permutation_p_value

    scores: dict[str, dict[int, float]] = collections.defaultdict(dict)
    for path in args.results:
        for line in pathlib.Path(path).read_text(encoding="utf-8").splitlines():
            run = json.loads(line)
            scores[run["arm"]][run["seed"]] = run["score"]
    base = scores["reference"]
    print("| arm (order, head) | seeds | accuracy mean ± std | took off (>= 56) | - reference | paired ± se | p |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for arm in [a for a in ARMS if a in scores]:
        values = list(scores[arm].values())
        off = sum(v >= TAKEOFF for v in values)
        row = (f"| {arm} ({', '.join(ARMS[arm])}) | {len(values)} | {statistics.mean(values):.2f} ± "
               f"{_stdev(values):.2f} | {off}/{len(values)} |")
        if arm == "reference":
            print(row + " | | |")
            continue
        paired = [scores[arm][s] - base[s] for s in scores[arm] if s in base]
        p = permutation_p_value(values, list(base.values()), draws=args.draws)
        print(row + f" {statistics.mean(values) - statistics.mean(base.values()):+.2f} | "
                    f"{statistics.mean(paired):+.2f} ± {_stdev(paired) / len(paired) ** 0.5:.2f} | {p_text(p)} |")
    if not args.finetune_quality:
        return
    own: dict[tuple[str, int], float] = {}
    for run in json.loads(pathlib.Path(args.finetune_quality).read_text(encoding="utf-8")):
        if run["task"] == "SST-2" and run["size"] == args.size:
            own[run["framework"], run["seed"]] = run["score"]
    print(f"\n| the program's own run vs this loop on its draws (SST-2, {args.size} rows) | seeds | own | this loop | "
          "own - this loop ± std | correlation |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for framework in ("kbert", "reference"):
        seeds = sorted(s for (f, s) in own if f == framework and s in scores[framework])
        if len(seeds) < 2:
            continue
        mine, loop = [own[framework, s] for s in seeds], [scores[framework][s] for s in seeds]
        differences = [m - l for m, l in zip(mine, loop)]
        print(f"| {framework} | {len(seeds)} | {statistics.mean(mine):.2f} | {statistics.mean(loop):.2f} | "
              f"{statistics.mean(differences):+.2f} ± {_stdev(differences):.2f} | "
              f"{statistics.correlation(mine, loop):.2f} |")


def _stdev(values: list[float]) -> float:
    return statistics.stdev(values) if len(values) > 1 else 0.0


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    w = commands.add_parser("write", help="draw both programs' orders and heads; pack the data and the model")
    w.add_argument("--pack", required=True, help="folder to write")
    w.add_argument("--seeds", type=int, default=300, help="this many seeds")
    w.add_argument("--first-seed", type=int, default=0)
    w.add_argument("--size", type=int, default=500, help="first N training rows")
    w.add_argument("--train", default=str(DATA / "sst2/train.tsv"))
    w.add_argument("--validation", default=str(DATA / "sst2/dev.tsv"))
    w.add_argument("--init", help="a Hugging Face BERT directory (default: all-MiniLM-L6-v2)")
    t = commands.add_parser("train", help="train the arms of a pack's seeds with the reference's loop")
    t.add_argument("--pack", required=True)
    t.add_argument("--out", required=True, help="JSON lines to append to")
    t.add_argument("--device", default="cpu")
    t.add_argument("--arms", nargs="+", choices=list(ARMS), help="default: all four")
    t.add_argument("--dropout", type=float, help="every dropout rate (default: the model's, 0.1)")
    t.add_argument("--worker", type=int, default=0, help="this process takes seeds worker, worker + workers, ...")
    t.add_argument("--workers", type=int, default=1)
    t.add_argument("--seconds", type=float, help="start no seed after this many seconds")
    r = commands.add_parser("report", help="the arms' table")
    r.add_argument("results", nargs="+")
    r.add_argument("--draws", type=int, default=20_000, help="random splits for the permutation p-value")
    r.add_argument("--finetune-quality", help="benchmarks.finetune_quality --json runs of the same seeds")
    r.add_argument("--size", type=int, default=500, help="the training size of those runs to read")
    args = parser.parse_args(argv)
    {"write": write, "train": train, "report": report}[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
