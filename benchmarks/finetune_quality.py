"""Fine-tuning quality: kbert vs. a Hugging Face PyTorch reference, same weights and recipe.

SST-2 (accuracy on the full dev set), CoNLL-2003 NER (entity F1 on test), SQuAD v1.1 (train on articles
0-39 of the dev file, EM/F1 on 40-47), all from all-MiniLM-L6-v2 and ../shared/data. Both sides get the
same examples, sequence length, epochs, batch size, peak learning rate, BERT's linear warmup/decay
(`kbert.training.schedules.LinearWarmupLinearDecay`, rebuilt as a torch LambdaLR), AdamW
(weight decay 0.01 except biases and LayerNorm, epsilon 1e-6), gradient clipping at norm 1.

Run: python -m benchmarks.finetune_quality [--sst2-train-rows 8000 ...]   (every size has a flag)
"""

from __future__ import annotations

import argparse
import os
import pathlib
import platform
import random
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras  # noqa: E402
import numpy as np  # noqa: E402

import kbert  # noqa: E402
from kbert.data.qa_decoding import decode_answers  # noqa: E402
from kbert.data.qa_features import build_qa_features  # noqa: E402
from kbert.metrics import accuracy, entity_scores, squad_evaluate  # noqa: E402
from kbert.training.finetune import finetune, read_task_examples  # noqa: E402

DATA = pathlib.Path(__file__).resolve().parents[2] / "shared" / "data"


class SteadyTimer(keras.callbacks.Callback):
    """Training time after the first batch (which includes graph tracing), and batches seen."""

    def on_train_batch_end(self, batch, logs=None):
        if not hasattr(self, "start"):
            self.start, self.batches = time.perf_counter(), 0
        else:
            self.batches += 1

    def on_train_end(self, logs=None):
        self.seconds = time.perf_counter() - self.start


# ---------------------------------------------------------------- Hugging Face PyTorch reference
def _torch_setup(seed: int):
    import torch

    torch.manual_seed(seed)
    torch.set_num_threads(os.cpu_count() or 1)
    return torch


def _hf_train(model, batches, epochs: int, lr: float, warmup_ratio: float, seed: int):
    """AdamW + linear warmup/decay + clipping; `batches(epoch)` yields (inputs, labels) dicts of tensors.

    Returns (seconds after the first step, examples after the first step).
    """
    import torch

    no_decay = ("bias", "LayerNorm.weight")
    groups = [
        {"params": [p for n, p in model.named_parameters() if not any(k in n for k in no_decay)], "weight_decay": 0.01},
        {"params": [p for n, p in model.named_parameters() if any(k in n for k in no_decay)], "weight_decay": 0.0},
    ]
    optimizer = torch.optim.AdamW(groups, lr=lr, eps=1e-6)
    steps = sum(1 for _ in batches(0)) * epochs
    warmup = int(warmup_ratio * steps)
    # kbert's (and Google BERT's) schedule: the warmup ramp replaces a decay measured from step 0, so the
    # rate peaks at lr * (1 - warmup / steps). transformers' get_linear_schedule_with_warmup peaks at lr
    # and decays from the end of the warmup: about 1 / (1 - warmup_ratio) times more learning rate.
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda u: u / warmup if u < warmup else max(0.0, 1.0 - u / steps))
    model.train()
    start, seen = None, 0
    for epoch in range(epochs):
        for inputs in batches(epoch):
            loss = model(**inputs).loss
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            schedule.step()
            optimizer.zero_grad()
            if start is None:
                start = time.perf_counter()
            else:
                seen += len(next(iter(inputs.values())))
    model.eval()
    return time.perf_counter() - start, seen


def _shuffled(n: int, batch_size: int, seed: int):
    order = list(range(n))
    random.Random(seed).shuffle(order)
    return [order[i:i + batch_size] for i in range(0, n, batch_size)]


def hf_sst2(init, train, dev, args):
    torch = _torch_setup(args.seed)
    from transformers import BertForSequenceClassification, BertTokenizerFast

    tok = BertTokenizerFast.from_pretrained(init)
    labels = sorted({e["label"] for e in train})
    model = BertForSequenceClassification.from_pretrained(init, num_labels=len(labels))

    def encode(examples, index):
        enc = tok([examples[i]["text"] for i in index], truncation=True, max_length=args.sst2_sequence_length,
                  padding=True, return_tensors="pt")
        return enc

    def batches(epoch):
        for index in _shuffled(len(train), args.batch_size, args.seed + epoch):
            enc = encode(train, index)
            enc["labels"] = torch.tensor([labels.index(train[i]["label"]) for i in index])
            yield dict(enc)

    seconds, seen = _hf_train(model, batches, args.epochs, args.learning_rate, args.warmup_ratio, args.seed)
    predicted = []
    with torch.no_grad():
        for i in range(0, len(dev), 128):
            predicted += model(**encode(dev, range(i, min(i + 128, len(dev))))).logits.argmax(-1).tolist()
    return {"accuracy": accuracy([labels.index(e["label"]) for e in dev], predicted)}, seen / seconds


def hf_conll(init, train, test, args):
    torch = _torch_setup(args.seed)
    from transformers import BertForTokenClassification, BertTokenizerFast

    tok = BertTokenizerFast.from_pretrained(init)
    names = kbert.data.build_label_vocabulary(t for e in train for t in e["tags"])
    model = BertForTokenClassification.from_pretrained(init, num_labels=len(names))

    def encode(examples, index):
        enc = tok([examples[i]["words"] for i in index], is_split_into_words=True, truncation=True,
                  max_length=args.conll_sequence_length, padding=True, return_tensors="pt")
        return enc

    def batches(epoch):
        for index in _shuffled(len(train), args.batch_size, args.seed + epoch):
            enc = encode(train, index)
            labels = []
            for row, i in enumerate(index):
                previous, row_labels = None, []
                for word in enc.word_ids(row):
                    first = word is not None and word != previous
                    row_labels.append(names.index(train[i]["tags"][word]) if first else -100)
                    previous = word
                labels.append(row_labels)
            enc["labels"] = torch.tensor(labels)
            yield dict(enc)

    seconds, seen = _hf_train(model, batches, args.epochs, args.learning_rate, args.warmup_ratio, args.seed)
    gold, guess = [], []
    with torch.no_grad():
        for start in range(0, len(test), 64):
            index = range(start, min(start + 64, len(test)))
            enc = encode(test, index)
            best = model(**enc).logits.argmax(-1)
            for row, i in enumerate(index):
                words = test[i]["words"]
                tags, previous = ["O"] * len(words), None
                for position, word in enumerate(enc.word_ids(row)):
                    if word is not None and word != previous:
                        tags[word] = names[int(best[row, position])]
                    previous = word
                gold.append(test[i]["tags"])
                guess.append(tags)
    scores = entity_scores(gold, guess)
    return {"f1": scores["f1"]}, seen / seconds


def hf_squad(init, train, dev, args):
    """Reference on the same windows as kbert (`build_qa_features`), decoded by the same rules."""
    torch = _torch_setup(args.seed)
    from transformers import BertForQuestionAnswering

    tokenizer = kbert.load_tokenizer(init)
    model = BertForQuestionAnswering.from_pretrained(init)
    settings = dict(sequence_length=args.squad_sequence_length, doc_stride=args.doc_stride, max_query_length=64)
    train_f = build_qa_features(train, tokenizer, **settings)
    dev_f = build_qa_features(dev, tokenizer, **settings)

    def tensors(features, index):
        return {"input_ids": torch.tensor(features.token_ids[index], dtype=torch.long),
                "token_type_ids": torch.tensor(features.segment_ids[index], dtype=torch.long),
                "attention_mask": torch.tensor(features.padding_mask[index], dtype=torch.long)}

    def batches(epoch):
        for index in _shuffled(len(train_f), args.batch_size, args.seed + epoch):
            inputs = tensors(train_f, index)
            inputs["start_positions"] = torch.tensor(train_f.start_positions[index], dtype=torch.long)
            inputs["end_positions"] = torch.tensor(train_f.end_positions[index], dtype=torch.long)
            yield inputs

    seconds, seen = _hf_train(model, batches, args.epochs, args.learning_rate, args.warmup_ratio, args.seed)
    start, end = [], []
    with torch.no_grad():
        for i in range(0, len(dev_f), 64):
            index = list(range(i, min(i + 64, len(dev_f))))
            out = model(**tensors(dev_f, index))
            mask = torch.tensor(dev_f.padding_mask[index])
            start.append(out.start_logits.masked_fill(~mask, -1e4).numpy())
            end.append(out.end_logits.masked_fill(~mask, -1e4).numpy())
    answers = decode_answers(dev, dev_f, np.concatenate(start), np.concatenate(end))
    scores = squad_evaluate(dev, answers)
    return {"exact_match": scores["exact_match"], "f1": scores["f1"]}, seen / seconds


# ---------------------------------------------------------------- kbert
def kbert_run(task, init, train, validation, out, args, **kwargs):
    timer = SteadyTimer()
    result = finetune(task, init, train, validation, out, epochs=args.epochs, batch_size=args.batch_size,
                      learning_rate=args.learning_rate, warmup_ratio=args.warmup_ratio, seed=args.seed,
                      verbose=args.verbose, callbacks=[timer], **kwargs)
    per_batch = result["train_examples"] * args.epochs / max(1, timer.batches + 1)
    return result["metrics"], timer.batches * per_batch / timer.seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", default="sst2,conll,squad")
    parser.add_argument("--frameworks", default="kbert,hf")
    parser.add_argument("--sst2-train-rows", type=int, default=8000)
    parser.add_argument("--sst2-dev-rows", type=int, default=None, help="default: the full dev set (872)")
    parser.add_argument("--sst2-sequence-length", type=int, default=64)
    parser.add_argument("--conll-train-sentences", type=int, default=3000, help="default 3000 of 14041")
    parser.add_argument("--conll-test-sentences", type=int, default=None, help="default: all 3453")
    parser.add_argument("--conll-sequence-length", type=int, default=128)
    parser.add_argument("--squad-train-questions", type=int, default=1500, help="from articles 0-39")
    parser.add_argument("--squad-eval-questions", type=int, default=600, help="from articles 40-47")
    parser.add_argument("--squad-sequence-length", type=int, default=256)
    parser.add_argument("--doc-stride", type=int, default=128)
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--learning-rate", type=float, default=5e-5)
    parser.add_argument("--warmup-ratio", type=float, default=0.1)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--verbose", type=int, default=2)
    parser.add_argument("--section", default="finetune_quality",
                        help="BENCHMARKS.md section to write (another name keeps a second recipe's table)")
    parser.add_argument("--no-write", action="store_true", help="print the table, leave BENCHMARKS.md alone")
    args = parser.parse_args()
    init = kbert.pretrained.minilm_path()
    tasks, frameworks = args.tasks.split(","), args.frameworks.split(",")
    work = pathlib.Path(tempfile.mkdtemp(prefix="kbert-finetune-quality-"))
    rows = []

    def both(name, metric, kbert_fn, hf_fn, sizes):
        result = {"task": name, "metric": metric, "sizes": sizes}
        for framework in frameworks:
            began = time.perf_counter()
            metrics, speed = (kbert_fn if framework == "kbert" else hf_fn)()
            result[framework] = (metrics, speed, time.perf_counter() - began)
            print(f"{name} {framework}: {metrics} {speed:.1f} examples/s", flush=True)
        rows.append(result)
        write(rows, args, frameworks)  # after each task, so a later failure keeps the finished rows

    if "sst2" in tasks:
        info = {"text_column": "sentence", "label_column": "label"}
        train = read_task_examples("classify", DATA / "sst2/train.tsv", info, args.sst2_train_rows)
        dev = read_task_examples("classify", DATA / "sst2/dev.tsv", info, args.sst2_dev_rows)
        both("SST-2", "accuracy",
             lambda: kbert_run("classify", init, DATA / "sst2/train.tsv", DATA / "sst2/dev.tsv", work / "sst2", args,
                               text_column="sentence", sequence_length=args.sst2_sequence_length,
                               max_train_examples=args.sst2_train_rows, max_validation_examples=args.sst2_dev_rows),
             lambda: hf_sst2(str(init), train, dev, args),
             f"train {len(train)} rows, dev {len(dev)}, length {args.sst2_sequence_length}")
    if "conll" in tasks:
        train = read_task_examples("tag", DATA / "conll2003/train.txt", {}, args.conll_train_sentences)
        test = read_task_examples("tag", DATA / "conll2003/test.txt", {}, args.conll_test_sentences)
        both("CoNLL-2003 NER", "entity F1",
             lambda: kbert_run("tag", init, DATA / "conll2003/train.txt", DATA / "conll2003/test.txt", work / "conll",
                               args, sequence_length=args.conll_sequence_length,
                               max_train_examples=args.conll_train_sentences,
                               max_validation_examples=args.conll_test_sentences),
             lambda: hf_conll(str(init), train, test, args),
             f"train {len(train)} sentences, test {len(test)}, length {args.conll_sequence_length}")
    if "squad" in tasks:
        squad = DATA / "squad_v1.1/dev-v1.1.json"
        train = read_task_examples("qa", squad, {"article_range": (0, 40)}, args.squad_train_questions)
        dev = read_task_examples("qa", squad, {"article_range": (40, 48)}, args.squad_eval_questions)
        both("SQuAD v1.1", "EM / F1",
             lambda: kbert_run("qa", init, squad, squad, work / "squad", args,
                               sequence_length=args.squad_sequence_length, doc_stride=args.doc_stride,
                               train_article_range=(0, 40), validation_article_range=(40, 48),
                               max_train_examples=args.squad_train_questions,
                               max_validation_examples=args.squad_eval_questions),
             lambda: hf_squad(str(init), train, dev, args),
             f"train {len(train)} questions (articles 0-39), eval {len(dev)} (articles 40-47), "
             f"length {args.squad_sequence_length}, stride {args.doc_stride}")


def _score(row, framework):
    if framework not in row:
        return "-", "-"
    metrics, speed, _ = row[framework]
    if "exact_match" in metrics:
        value = f"{metrics['exact_match']:.1f} / {metrics['f1']:.1f}"
    else:
        value = f"{100 * metrics[{'accuracy': 'accuracy', 'entity F1': 'f1'}[row['metric']]]:.1f}"
    return value, f"{speed:.1f}"


def write(rows, args, frameworks) -> None:
    from benchmarks.report import command_line, write_section

    lines = [
        f"## Fine-tuning quality: kbert vs. Hugging Face PyTorch (all-MiniLM-L6-v2, {args.epochs} epoch(s), "
        f"lr {args.learning_rate:g})",
        "",
        f"Command: `{command_line()}`  ",
        f"Machine: {platform.processor() or platform.machine()}, {os.cpu_count()} CPU cores, no GPU; "
        f"TF {__import__('tensorflow').__version__}, torch {__import__('torch').__version__}, "
        f"transformers {__import__('transformers').__version__}.  ",
        f"Recipe (both): {args.epochs} epoch(s), batch {args.batch_size}, peak lr {args.learning_rate}, "
        f"linear warmup {args.warmup_ratio:.0%} then linear decay, AdamW wd 0.01 (not on bias/LayerNorm), "
        "eps 1e-6, clip 1.0, dropout 0.1, seed "
        f"{args.seed}. Examples/s = training examples (QA: windows) per second after the first step "
        "(graph tracing excluded), run one after the other in the same process.",
        "",
        "| task | metric | kbert | reference | kbert ex/s | reference ex/s | speed ratio | data |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        k, ks = _score(row, "kbert")
        h, hs = _score(row, "hf")
        ratio = f"{float(ks) / float(hs):.2f}x" if "-" not in (ks, hs) and float(hs) > 0 else "-"
        lines.append(f"| {row['task']} | {row['metric']} | {k} | {h} | {ks} | {hs} | {ratio} | {row['sizes']} |")
    text = "\n".join(lines) + "\n"
    print(text)
    if not args.no_write:
        write_section(args.section, text)


if __name__ == "__main__":
    main()
