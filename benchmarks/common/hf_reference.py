"""The reference fine-tuning job: transformers + PyTorch, BERT's recipe, the flags of `kbert finetune`.

A standalone program (it imports neither kbert nor TensorFlow, so its wall time is that of a plain
PyTorch job): AdamW (epsilon 1e-6, weight decay except biases and LayerNorm), gradients clipped at norm 1,
linear warmup then linear decay with the shape of kbert's (and Google BERT's) `LinearWarmupLinearDecay`:
the decay is measured from step 0, so the warmup ramp peaks at lr * (1 - warmup / steps)), shuffled
batches with dynamic padding, the model's own dropout (0.1 in BERT configs). `--device cuda` runs it on a GPU
(`benchmarks.studies.objective_reference` does, where TensorFlow is not installed).

    python -m benchmarks.common.hf_reference classify --init DIR --train train.tsv --validation dev.tsv \
        --text-column sentence --label-column label --sequence-length 64 --epochs 1 --seed 0 --out OUT
    python -m benchmarks.common.hf_reference tag --init DIR --train train.txt --validation test.txt ... --out OUT
    python -m benchmarks.common.hf_reference qa --init DIR --features windows.npz ... --out OUT

Writes OUT/metrics.json (classify: accuracy; tag: word accuracy), OUT/predictions.json (classify: labels,
tag: one tag per word) or OUT/logits.npz (qa: start/end logits of the validation windows), and prints a
progress line `STEP/STEPS` after every optimizer step, as Keras' progress bar does.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import pathlib
import random
import sys
import time
from typing import TYPE_CHECKING, Any, Callable, Iterator

import numpy as np

if TYPE_CHECKING:
    import torch

Batch = dict[str, "torch.Tensor"]


def read_tsv(path: str, text: str, pair: str | None, label: str,
             limit: int | None) -> list[tuple[str, str | None, str]]:
    """The first `limit` (text, pair or None, label) rows of an unquoted TSV with a header."""
    with open(path, encoding="utf-8-sig", newline="") as handle:
        rows = list(csv.DictReader(handle, delimiter="\t", quoting=csv.QUOTE_NONE))
    rows = rows[:limit] if limit else rows
    return [(row[text], row[pair] if pair else None, row[label].strip()) for row in rows]


def read_conll(path: str, limit: int | None, tag_index: int = 3) -> list[tuple[list[str], list[str]]]:
    """(words, tags) sentences of a CoNLL-2003 file, `-DOCSTART-` lines skipped; the first `limit`."""
    sentences: list[tuple[list[str], list[str]]] = []
    words: list[str] = []
    tags: list[str] = []
    with open(path, encoding="utf-8-sig") as handle:
        for line in [*handle, ""]:
            fields = line.split()
            if fields and fields[0] != "-DOCSTART-":
                words.append(fields[0])
                tags.append(fields[tag_index])
            elif words:
                sentences.append((words, tags))
                words, tags = [], []
    return sentences[:limit] if limit else sentences


def shuffled_batches(n: int, batch_size: int, seed: int, shuffle: bool = True) -> list[list[int]]:
    """Index batches of a seeded shuffle of range(n) (in order with `shuffle=False`); the last may be short."""
    order = list(range(n))
    if shuffle:
        random.Random(seed).shuffle(order)
    return [order[i:i + batch_size] for i in range(0, n, batch_size)]


def bert_adamw(model: torch.nn.Module, learning_rate: float, weight_decay: float = 0.01,
               fused: bool = False) -> torch.optim.AdamW:
    """`torch.optim.AdamW` as BERT fine-tuning scripts set it: eps 1e-6, no decay on biases and LayerNorm
    (`fused`: torch's one-kernel update, for CUDA)."""
    import torch

    named = list(model.named_parameters())
    excluded = [("bias" in n or "LayerNorm" in n) for n, _ in named]
    return torch.optim.AdamW([
        {"params": [p for (_, p), skip in zip(named, excluded) if not skip], "weight_decay": weight_decay},
        {"params": [p for (_, p), skip in zip(named, excluded) if skip], "weight_decay": 0.0},
    ], lr=learning_rate, eps=1e-6, fused=fused)


def linear_warmup_linear_decay(optimizer: torch.optim.Optimizer, warmup: int,
                               steps: int) -> torch.optim.lr_scheduler.LambdaLR:
    """kbert's (and Google BERT's) `LinearWarmupLinearDecay` as a `LambdaLR`: a linear ramp over `warmup` updates,
    and a linear decay to 0 at `steps` measured from update 0."""
    import torch

    return torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda u: u / warmup if u < warmup else max(0.0, 1.0 - u / steps))


def bert_update(model: torch.nn.Module, optimizer: torch.optim.Optimizer,
                schedule: torch.optim.lr_scheduler.LRScheduler, loss: torch.Tensor) -> float:
    """One update of BERT's recipe: `loss`'s gradients clipped at global norm 1, the optimizer's and the
    schedule's step, gradients zeroed. Returns the loss's value."""
    import torch

    loss.backward()
    value = float(loss.detach())
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    schedule.step()
    optimizer.zero_grad()
    return value


def train(model: torch.nn.Module, batches: Callable[[int], Iterator[Batch]], args: argparse.Namespace) -> dict:
    """Fine-tunes `model` on `batches(epoch)`; returns the training time, examples/s after step 1 and the
    loss of every step."""
    optimizer = bert_adamw(model, args.learning_rate, args.weight_decay)
    steps = sum(1 for _ in batches(0)) * args.epochs
    schedule = linear_warmup_linear_decay(optimizer, int(args.warmup_ratio * steps), steps)
    model.train()
    began, first, seen, step, losses = time.perf_counter(), None, 0, 0, []
    for epoch in range(args.epochs):
        for inputs in batches(epoch):
            inputs = {name: tensor.to(args.device) for name, tensor in inputs.items()}
            losses.append(bert_update(model, optimizer, schedule, model(**inputs).loss))
            step += 1
            print(f"{step}/{steps}", flush=True)
            if first is None:
                first = time.perf_counter()
            else:
                seen += len(inputs["input_ids"])
    model.eval()
    end = time.perf_counter()
    return {"train_seconds": end - began, "steady_examples_per_second": seen / max(end - first, 1e-9),
            "losses": losses}


def classify(args: argparse.Namespace, tokenizer, out: pathlib.Path) -> dict[str, Any]:
    import torch
    from transformers import BertForSequenceClassification

    columns = (args.text_column, args.text_pair_column, args.label_column)
    train_rows = read_tsv(args.train, *columns, args.max_train_examples)
    dev_rows = read_tsv(args.validation, *columns, args.max_validation_examples)
    labels = sorted({row[2] for row in train_rows})
    model = BertForSequenceClassification.from_pretrained(args.init, num_labels=len(labels), **dropout(args))
    if args.head_init:  # the same starting head as another framework's run (benchmarks.studies.paired_finetune)
        head = np.load(args.head_init)
        with torch.no_grad():
            model.classifier.weight.copy_(torch.from_numpy(head["kernel"].T))
            model.classifier.bias.copy_(torch.from_numpy(head["bias"]))
    model.to(args.device)

    def encode(rows, index) -> Batch:
        pairs = None if args.text_pair_column is None else [rows[i][1] for i in index]
        return dict(tokenizer([rows[i][0] for i in index], pairs, truncation=True,
                              max_length=args.sequence_length, padding=True, return_tensors="pt"))

    def batches(epoch: int) -> Iterator[Batch]:
        for index in shuffled_batches(len(train_rows), args.batch_size, args.seed + epoch, not args.no_shuffle):
            yield dict(encode(train_rows, index), labels=torch.tensor([labels.index(train_rows[i][2]) for i in index]))

    timing = train(model, batches, args)
    predicted: list[str] = []
    with torch.no_grad():
        for start in range(0, len(dev_rows), 128):
            inputs = encode(dev_rows, range(start, min(start + 128, len(dev_rows))))
            logits = model(**{name: tensor.to(args.device) for name, tensor in inputs.items()}).logits
            predicted += [labels[i] for i in logits.argmax(-1).tolist()]
    (out / "predictions.json").write_text(json.dumps(predicted) + "\n", encoding="utf-8")
    correct = sum(p == row[2] for p, row in zip(predicted, dev_rows))
    return dict(timing, train_examples=len(train_rows), accuracy=correct / len(dev_rows),
                num_examples=len(dev_rows))


def dropout(args: argparse.Namespace) -> dict[str, float]:
    """Config overrides for `--dropout` (every dropout of the model), none without it."""
    if args.dropout is None:
        return {}
    return {"hidden_dropout_prob": args.dropout, "attention_probs_dropout_prob": args.dropout,
            "classifier_dropout": args.dropout}


def tag(args: argparse.Namespace, tokenizer, out: pathlib.Path) -> dict[str, Any]:
    """Each word's first sub-token carries its tag (the others are ignored), as in kbert's tagging task."""
    import torch
    from transformers import BertForTokenClassification

    train_rows = read_conll(args.train, args.max_train_examples)
    dev_rows = read_conll(args.validation, args.max_validation_examples)
    names = sorted({t for _, tags in train_rows for t in tags})
    model = BertForTokenClassification.from_pretrained(args.init, num_labels=len(names), **dropout(args))
    if args.head_init:  # the same starting head as another framework's run, columns in its `labels` order
        head = np.load(args.head_init)
        columns = [list(head["labels"]).index(name) for name in names]
        with torch.no_grad():
            model.classifier.weight.copy_(torch.from_numpy(head["kernel"][:, columns].T))
            model.classifier.bias.copy_(torch.from_numpy(head["bias"][columns]))
    model.to(args.device)

    def encode(rows, index):
        return tokenizer([rows[i][0] for i in index], is_split_into_words=True, truncation=True,
                         max_length=args.sequence_length, padding=True, return_tensors="pt")

    def first_subtokens(encoding, row: int) -> Iterator[tuple[int, int]]:
        previous = None
        for position, word in enumerate(encoding.word_ids(row)):
            if word is not None and word != previous:
                yield position, word
            previous = word

    def batches(epoch: int) -> Iterator[Batch]:
        for index in shuffled_batches(len(train_rows), args.batch_size, args.seed + epoch, not args.no_shuffle):
            encoding = encode(train_rows, index)
            labels = torch.full(encoding["input_ids"].shape, -100)
            for row, i in enumerate(index):
                for position, word in first_subtokens(encoding, row):
                    labels[row, position] = names.index(train_rows[i][1][word])
            yield dict(encoding, labels=labels)

    timing = train(model, batches, args)
    predicted: list[list[str]] = []
    with torch.no_grad():
        for start in range(0, len(dev_rows), 64):
            index = range(start, min(start + 64, len(dev_rows)))
            encoding = encode(dev_rows, index)
            best = model(**{name: tensor.to(args.device) for name, tensor in encoding.items()}).logits.argmax(-1).cpu()
            for row, i in enumerate(index):
                tags = ["O"] * len(dev_rows[i][0])  # words cut by truncation count as "O", as in kbert
                for position, word in first_subtokens(encoding, row):
                    tags[word] = names[int(best[row, position])]
                predicted.append(tags)
    (out / "predictions.json").write_text(json.dumps(predicted) + "\n", encoding="utf-8")
    pairs = [(g, p) for (_, gold), guess in zip(dev_rows, predicted) for g, p in zip(gold, guess)]
    return dict(timing, train_examples=len(train_rows), accuracy=float(np.mean([g == p for g, p in pairs])),
                num_examples=len(dev_rows))


def qa(args: argparse.Namespace, tokenizer, out: pathlib.Path) -> dict[str, Any]:
    """Trains on the windows in `--features` (arrays `train_*` and `dev_*`: token_ids, segment_ids,
    padding_mask, and train_start_positions / train_end_positions); writes the dev windows' logits."""
    import torch
    from transformers import BertForQuestionAnswering

    with np.load(args.features) as stored:  # read once (a compressed .npz would be inflated at every access)
        arrays = {name: stored[name] for name in stored.files}
    model = BertForQuestionAnswering.from_pretrained(args.init).to(args.device)

    def tensors(split: str, index) -> Batch:
        mask = arrays[f"{split}_padding_mask"][index]
        width = int(mask.sum(-1).max())  # dynamic padding: cut the batch to its longest window
        return {"input_ids": torch.tensor(arrays[f"{split}_token_ids"][index][:, :width], dtype=torch.long),
                "token_type_ids": torch.tensor(arrays[f"{split}_segment_ids"][index][:, :width], dtype=torch.long),
                "attention_mask": torch.tensor(mask[:, :width], dtype=torch.long)}

    def batches(epoch: int) -> Iterator[Batch]:
        for index in shuffled_batches(len(arrays["train_token_ids"]), args.batch_size, args.seed + epoch):
            yield dict(tensors("train", index),
                       start_positions=torch.tensor(arrays["train_start_positions"][index], dtype=torch.long),
                       end_positions=torch.tensor(arrays["train_end_positions"][index], dtype=torch.long))

    timing = train(model, batches, args)
    length = arrays["dev_token_ids"].shape[1]
    start, end = [], []
    with torch.no_grad():
        for i in range(0, len(arrays["dev_token_ids"]), 64):
            inputs = tensors("dev", list(range(i, min(i + 64, len(arrays["dev_token_ids"])))))
            result = model(**{name: tensor.to(args.device) for name, tensor in inputs.items()})
            pad = length - inputs["input_ids"].shape[1]
            mask = inputs["attention_mask"].bool()
            for logits, into in ((result.start_logits, start), (result.end_logits, end)):
                into.append(torch.nn.functional.pad(logits.cpu().masked_fill(~mask, -1e4), (0, pad), value=-1e4).numpy())
    if args.logits_dtype == "float32":
        np.savez(out / "logits.npz", start_logits=np.concatenate(start), end_logits=np.concatenate(end))
    else:  # smaller, to travel back from another machine; compressed
        np.savez_compressed(out / "logits.npz", start_logits=np.concatenate(start).astype(args.logits_dtype),
                            end_logits=np.concatenate(end).astype(args.logits_dtype))
    return dict(timing, train_examples=len(arrays["train_token_ids"]))


def add_recipe_arguments(parser: argparse.ArgumentParser, epochs: int = 3) -> None:
    """The flags of BERT's fine-tuning recipe that `train` reads, with `kbert finetune`'s names and defaults
    (`epochs`: another default): --sequence-length, --epochs, --batch-size, --learning-rate, --warmup-ratio and
    --weight-decay."""
    parser.add_argument("--sequence-length", type=int, default=128)
    parser.add_argument("--epochs", type=int, default=epochs)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--learning-rate", type=float, default=5e-5)
    parser.add_argument("--warmup-ratio", type=float, default=0.1)
    parser.add_argument("--weight-decay", type=float, default=0.01)


def build_parser() -> argparse.ArgumentParser:
    """The subset of `kbert finetune`'s flags this job needs, with the same names and defaults."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.common.hf_reference", description=__doc__.splitlines()[0])
    tasks = parser.add_subparsers(dest="task", required=True)
    for name in ("classify", "tag", "qa"):
        sub = tasks.add_parser(name)
        sub.add_argument("--init", required=True)
        sub.add_argument("--out", required=True)
        add_recipe_arguments(sub)
        sub.add_argument("--seed", type=int, default=0)
        sub.add_argument("--device", default="cpu", help="torch device: cpu, or cuda to fine-tune on a GPU")
        sub.add_argument("--threads", type=int, help="torch's CPU threads (default: every core)")
        if name == "qa":
            sub.add_argument("--features", required=True, help=".npz of train and dev windows (see qa())")
            sub.add_argument("--logits-dtype", choices=("float32", "float16"), default="float32",
                             help="float16: logits.npz compressed, a quarter of the size")
            continue
        sub.add_argument("--train", required=True)
        sub.add_argument("--validation", required=True)
        sub.add_argument("--max-train-examples", type=int)
        sub.add_argument("--max-validation-examples", type=int)
        if name == "classify":
            sub.add_argument("--text-column", default="text")
            sub.add_argument("--text-pair-column")
            sub.add_argument("--label-column", default="label")
        sub.add_argument("--no-shuffle", action="store_true", help="train on the rows in file order")
        sub.add_argument("--head-init", help=".npz with the classifier's starting kernel [hidden, classes] "
                                             "and bias (tag: and `labels`, the names of its columns)")
        sub.add_argument("--dropout", type=float, help="every dropout rate (default: the model's config)")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    import torch
    from transformers import BertTokenizerFast

    torch.manual_seed(args.seed)
    torch.set_num_threads(args.threads or os.cpu_count() or 1)
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    tokenizer = BertTokenizerFast.from_pretrained(args.init)
    result = {"classify": classify, "tag": tag, "qa": qa}[args.task](args, tokenizer, out)
    (out / "metrics.json").write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(json.dumps({k: v for k, v in result.items() if k != "losses"}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
