"""kbert's embed task and sentence-transformers trained from the same start on the same batches: dev retrieval.

The issue's goal: `kbert finetune embed` on a pair set and the same training in PyTorch on sentence-transformers'
modules (same loss, AdamW, schedule and batch) score within 0.01 of each other on dev. No paraphrase or STS set
is at hand offline, so the pairs are SQuAD v1.1 dev's, as `benchmarks.common.pair_task` builds them: a question
and the context sentence holding its answer (its positive pairs only). Articles 0-39 train; on articles 40-47
each question looks for its own sentence among every sentence of those articles (recall@1, recall@10, mrr@10,
ndcg@10, `kbert.metrics.embedding.retrieval_metrics`, the same function on both sides' embeddings).

Each seed writes one shuffle of the first `--size` training pairs as a TSV (`anchor`, `positive`), and both
sides read it in file order, full batches only (kbert's embed task drops a short last batch). Each side runs in
a process of its own from all-MiniLM-L6-v2 (`kbert.pretrained.minilm_path()`), float32:
- kbert: what `kbert finetune embed --init MINILM --text-column anchor --text-pair-column positive
  --mixed-precision none` builds (`kbert.training.finetune`: `EmbeddingTask`, its `MultipleNegativesRankingLoss`
  at scale 20, not symmetric, `create_optimizer`: AdamW eps 1e-6, decay 0.01 except biases and LayerNorm,
  global norm clipped at 1, linear warmup over 10% of the steps then linear decay from step 0 as BERT's), put
  together here because `kbert finetune` has no flag to keep the file's order and its `--dropout` is a head's
  (the embed task has none): `--dropout` here sets the encoder's rates.
- PyTorch: `SentenceTransformer(MINILM)` (Transformer, mean Pooling, Normalize) with
  `MultipleNegativesRankingLoss(scale=20)` (cosine, anchor to candidates only), `torch.optim.AdamW` with the
  same groups, eps and decay (`benchmarks.common.hf_reference.bert_adamw`), the same schedule as a `LambdaLR`
  (`linear_warmup_linear_decay`), `clip_grad_norm_(1.0)` (`bert_update`), a plain loop; texts cut at
  `--sequence-length` tokens as kbert's packer cuts them.
The untrained model is scored by both sides too (the same weights: their scores must agree to rounding).

Per seed it prints both sides' scores, the step-1 loss on each side (same weights and batch: equal up to the
dropout masks, and to float rounding with `--dropout 0`) and the mean |difference| of the loss curves; then the
mean and spread of the paired differences. `--json` writes everything; `--write` stores the report as
BENCHMARKS.md's "paired_embed" section.

    python -m benchmarks.studies.paired_embed --size 2000 --seeds 0 1 2 --json paired_embed.json
    python -m benchmarks.studies.paired_embed --size 512 --seeds 0 --dropout 0
    python -m benchmarks.studies.paired_embed --size 64 --seeds 0 --batch-size 16  # smoke test

Measured once (2-core Intel Xeon, shared and loaded, `--threads 1`): 810 dev questions among 1,712 sentences;
untrained 0.6235 / 0.9025 / 0.7227 / 0.7669 on both sides. `--size 512 --seeds 0 1 2` (16 steps of 32):
kbert - sentence-transformers recall@1 -0.0008 ± 0.0100, recall@10 +0.0000 ± 0.0000, mrr@10 +0.0001 ± 0.0066,
ndcg@10 +0.0001 ± 0.0050 (each seed within 0.0099); step-1 losses 0.01-0.04 apart, as the dropout masks differ.
`--size 160 --seeds 0 --dropout 0`: every step's loss within 3e-7 and the same four scores.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

from benchmarks.common.hf_reference import add_recipe_arguments, bert_adamw, bert_update, linear_warmup_linear_decay
from benchmarks.common.pair_task import article_sentences, build_pair_examples

REPO = pathlib.Path(__file__).resolve().parents[2]
SQUAD = REPO.parent / "shared" / "data" / "squad_v1.1" / "dev-v1.1.json"
TRAIN_ARTICLES, DEV_ARTICLES = (0, 40), (40, 48)
METRICS = ("recall@1", "recall@10", "mrr@10", "ndcg@10")
SIDES = ("kbert", "torch")


def positive_pairs(squad: dict, articles: tuple[int, int]) -> list[tuple[str, str]]:
    """(question, the sentence holding its answer): the positive pairs of `build_pair_examples`, in its order."""
    return [(e["question"], e["sentence"]) for e in build_pair_examples(squad, articles) if e["label"] == "1"]


def dev_set(squad: dict) -> dict:
    """The dev articles' questions, every distinct sentence of those articles, and each question's sentence."""
    pairs = positive_pairs(squad, DEV_ARTICLES)
    sentences = article_sentences(squad, DEV_ARTICLES)
    where = {s: i for i, s in enumerate(sentences)}
    return {"questions": [q for q, _ in pairs], "sentences": sentences, "relevant": [where[s] for _, s in pairs]}


def write_training_file(pairs: list[tuple[str, str]], size: int, seed: int, path: pathlib.Path) -> pathlib.Path:
    """The seed's shuffle of the first `size` pairs as an unquoted TSV with the header `anchor  positive`."""
    chosen = pairs[:size]
    order = np.random.default_rng(seed).permutation(len(chosen))
    path.write_text("".join(f"{a}\t{p}\n" for a, p in [("anchor", "positive"), *(chosen[i] for i in order)]),
                    encoding="utf-8")
    return path


def read_training_file(path: str) -> list[tuple[str, str]]:
    with open(path, encoding="utf-8", newline="") as handle:
        return [(row["anchor"], row["positive"])
                for row in csv.DictReader(handle, delimiter="\t", quoting=csv.QUOTE_NONE)]


# -- the two sides, each in its own process -------------------------------------------------------------------
def kbert_side(args: argparse.Namespace) -> dict:
    """kbert's embed task trained on the file in order; returns the step losses and the dev embeddings."""
    import keras
    import tensorflow as tf

    if args.threads:
        tf.config.threading.set_intra_op_parallelism_threads(args.threads)
        tf.config.threading.set_inter_op_parallelism_threads(args.threads)
    from kbert.optim.defaults import create_optimizer
    from kbert.tasks import EmbeddingTask
    from kbert.tasks.embedding_data import embedding_dataset
    from kbert.text import BertPreprocessor, load_tokenizer
    from kbert.training.run_setup import build_encoder, run_setup
    from kbert.training.xla import compile_model

    keras.utils.set_random_seed(args.seed)
    rates = {} if args.dropout is None else {"hidden_dropout_prob": args.dropout,
                                             "attention_probs_dropout_prob": args.dropout}
    task = EmbeddingTask(text_column="anchor", text_pair_column="positive")
    dev = json.loads(pathlib.Path(args.dev).read_text(encoding="utf-8"))
    with run_setup("auto", mixed_precision="none") as distribution:
        train = task.read_examples(args.train, split="train")
        task = task.prepare(args.train, train)
        with distribution.scope():
            tokenizer = load_tokenizer(args.init)
            encoder = build_encoder(tokenizer.vocabulary_size(), args.init, **rates)
            preprocessor = BertPreprocessor(tokenizer, args.sequence_length, padding="dynamic")
            # `task.dataset(training=True)` but in the file's order: the same full batches, unshuffled
            data = embedding_dataset(train, preprocessor, task.columns, batch_size=args.batch_size, shuffle=False,
                                     with_labels=True, full_batches=True)
            steps = len(train) // args.batch_size * args.epochs
            model = task.build_model(encoder)
            compile_model(model, jit_compile=False, loss=task.loss(), optimizer=create_optimizer(
                args.learning_rate, steps, int(args.warmup_ratio * steps), weight_decay=args.weight_decay))

        def embed(texts: list[str]) -> np.ndarray:
            rows = embedding_dataset([{"text": t} for t in texts], preprocessor, ("text",), batch_size=64,
                                     with_labels=False)
            return model.predict(rows, verbose=0)

        out = {"base_" + k: embed(dev[k]) for k in ("questions", "sentences")} if args.base else {}
        losses: list[float] = []

        class StepLoss(keras.callbacks.Callback):
            """Each step's loss from Keras' running mean over the epoch (every batch is a full one)."""

            def on_epoch_begin(self, epoch, logs=None):
                self.mean = 0.0

            def on_train_batch_end(self, batch, logs=None):
                mean = float(logs["loss"])
                losses.append((batch + 1) * mean - batch * self.mean)
                self.mean = mean

        began = time.perf_counter()
        model.fit(data, epochs=args.epochs, verbose=0, callbacks=[StepLoss()], shuffle=False)
        seconds = time.perf_counter() - began
        out.update({k: embed(dev[k]) for k in ("questions", "sentences")})
    return {"losses": losses, "train_seconds": seconds, "embeddings": out}


def torch_side(args: argparse.Namespace) -> dict:
    """sentence-transformers' modules and loss trained on the file in order; the same outputs as `kbert_side`."""
    import torch
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.losses import MultipleNegativesRankingLoss

    if args.threads:
        torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    rates = {} if args.dropout is None else {"hidden_dropout_prob": args.dropout,
                                             "attention_probs_dropout_prob": args.dropout}
    model = SentenceTransformer(args.init, device="cpu", config_kwargs=rates)
    if args.dropout is not None and any(m.p != args.dropout for m in model.modules()
                                        if isinstance(m, torch.nn.Dropout)):
        raise SystemExit(f"sentence-transformers kept a dropout rate other than {args.dropout}")
    model.max_seq_length = args.sequence_length
    dev = json.loads(pathlib.Path(args.dev).read_text(encoding="utf-8"))

    def embed(texts: list[str]) -> np.ndarray:
        model.eval()
        return model.encode(texts, batch_size=64, convert_to_numpy=True)

    out = {"base_" + k: embed(dev[k]) for k in ("questions", "sentences")} if args.base else {}
    pairs = read_training_file(args.train)
    batches = [pairs[i:i + args.batch_size] for i in range(0, len(pairs) // args.batch_size * args.batch_size,
                                                            args.batch_size)]
    steps = len(batches) * args.epochs
    loss_function = MultipleNegativesRankingLoss(model, scale=20.0)  # kbert's default scale, one direction
    optimizer = bert_adamw(model, args.learning_rate, args.weight_decay)
    schedule = linear_warmup_linear_decay(optimizer, int(args.warmup_ratio * steps), steps)
    losses: list[float] = []
    model.train()
    began = time.perf_counter()
    for _ in range(args.epochs):
        for batch in batches:
            columns = [model.preprocess([pair[c] for pair in batch]) for c in (0, 1)]
            losses.append(bert_update(model, optimizer, schedule, loss_function(columns, None)))
    seconds = time.perf_counter() - began
    out.update({k: embed(dev[k]) for k in ("questions", "sentences")})
    return {"losses": losses, "train_seconds": seconds, "embeddings": out}


def run_side(args: argparse.Namespace) -> None:
    """`--side NAME`: trains one side, writes OUT/side.json (losses, seconds) and OUT/embeddings.npz."""
    result = (kbert_side if args.side == "kbert" else torch_side)(args)
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    np.savez(out / "embeddings.npz", **result.pop("embeddings"))
    (out / "side.json").write_text(json.dumps(result) + "\n", encoding="utf-8")


# -- the harness ------------------------------------------------------------------------------------------------
def scores(embeddings, dev: dict, prefix: str = "") -> dict[str, float]:
    """Retrieval metrics of one side's dev embeddings (`prefix` "base_": the untrained model's)."""
    from kbert.metrics.embedding import retrieval_metrics

    return retrieval_metrics(embeddings[prefix + "questions"], embeddings[prefix + "sentences"],
                             [{i} for i in dev["relevant"]])


def run_seed(args: argparse.Namespace, seed: int, dev_file: pathlib.Path, dev: dict, pairs: list,
             work: pathlib.Path, base: bool) -> dict:
    train = write_training_file(pairs, args.size, seed, work / "train.tsv")
    common = ["--init", str(args.init), "--train", str(train), "--dev", str(dev_file),
              "--sequence-length", str(args.sequence_length), "--batch-size", str(args.batch_size),
              "--epochs", str(args.epochs), "--learning-rate", str(args.learning_rate),
              "--warmup-ratio", str(args.warmup_ratio), "--weight-decay", str(args.weight_decay),
              "--seed", str(seed), "--threads", str(args.threads)]
    common += ([] if args.dropout is None else ["--dropout", str(args.dropout)]) + (["--base"] if base else [])
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2",
               PYTHONPATH=os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])))
    result: dict = {"seed": seed}
    for name in SIDES:
        began = time.perf_counter()
        subprocess.run([sys.executable, "-m", "benchmarks.studies.paired_embed", "--side", name, *common,
                        "--out", str(work / name)], cwd=REPO, env=env, check=True, stdout=subprocess.DEVNULL)
        side = json.loads((work / name / "side.json").read_text(encoding="utf-8"))
        embeddings = np.load(work / name / "embeddings.npz")
        result[name] = {"scores": scores(embeddings, dev), "losses": side["losses"],
                        "train_seconds": side["train_seconds"], "wall_seconds": time.perf_counter() - began}
        if base:
            result[name]["base_scores"] = scores(embeddings, dev, "base_")
    k, t = result["kbert"]["losses"], result["torch"]["losses"]
    result["first_loss"] = [k[0], t[0]]
    result["mean_abs_loss_difference"] = float(np.mean(np.abs(np.subtract(k, t))))
    result["difference"] = {m: result["kbert"]["scores"][m] - result["torch"]["scores"][m] for m in METRICS}
    return result


def mean_spread(values: list[float]) -> tuple[float, float]:
    return statistics.mean(values), statistics.stdev(values) if len(values) > 1 else 0.0


def report(runs: list[dict], args: argparse.Namespace, dev: dict, load_start: str, seconds: float) -> str:
    from benchmarks.common.report import command_line, host_line, load_average

    def row(values: dict) -> str:
        return " / ".join(f"{values[m]:.4f}" for m in METRICS)

    def signed(first: dict, second: dict) -> str:
        return " / ".join(f"{first[m] - second[m]:+.4f}" for m in METRICS)

    dropout = "0.1 (the model's)" if args.dropout is None else args.dropout
    lines = ["## Sentence embeddings, paired: kbert's embed task vs sentence-transformers, the same batches", "",
             f"all-MiniLM-L6-v2 fine-tuned on the first {args.size} SQuAD question/sentence pairs (articles 0-39, "
             f"{args.epochs} epoch(s), batch {args.batch_size}, lr {args.learning_rate}, sequence length "
             f"{args.sequence_length}, dropout {dropout}, float32), each seed one shuffle read in order by both "
             f"sides; dev: {len(dev['questions'])} questions of articles 40-47, each looking for its sentence among "
             f"{len(dev['sentences'])}. Metrics: {' / '.join(METRICS)}.", "",
             "| seed | kbert | sentence-transformers | kbert - ST | step-1 loss kbert / ST | mean abs loss diff |",
             "|---|---|---|---|---|---:|"]
    base = next((r for r in runs if "base_scores" in r["kbert"]), None)
    if base is not None:
        k, t = base["kbert"]["base_scores"], base["torch"]["base_scores"]
        lines.append(f"| untrained | {row(k)} | {row(t)} | {signed(k, t)} | - | - |")
    for r in runs:
        k, t = r["kbert"]["scores"], r["torch"]["scores"]
        lines.append(f"| {r['seed']} | {row(k)} | {row(t)} | {signed(k, t)} | {r['first_loss'][0]:.6f} / "
                     f"{r['first_loss'][1]:.6f} | {r['mean_abs_loss_difference']:.2e} |")
    lines.append("")
    for m in METRICS:
        (mean, spread), (km, ks), (tm, ts) = (mean_spread([r["difference"][m] for r in runs]),
                                              *(mean_spread([r[s]["scores"][m] for r in runs]) for s in SIDES))
        lines.append(f"- {m}: kbert {km:.4f} ± {ks:.4f}, sentence-transformers {tm:.4f} ± {ts:.4f}; paired "
                     f"difference {mean:+.4f} ± {spread:.4f} over {len(runs)} seed(s)")
    worst = max(abs(mean_spread([r["difference"][m] for r in runs])[0]) for m in METRICS)
    train_seconds = {s: sum(r[s]["train_seconds"] for r in runs) for s in SIDES}
    lines += ["", f"**Largest mean paired difference: {worst:.4f}** (goal: within 0.01: "
                  f"{'met' if worst <= 0.01 else 'not met'}).", "",
              f"Command: `{command_line()}`  ",
              f"Host: {host_line()}; load average (1/5/15 min) {load_start} at the start, {load_average()} at the "
              f"end; {time.strftime('%Y-%m-%d')}; {seconds / 60:.1f} min in all, training "
              f"{train_seconds['kbert']:.0f} s (kbert) and {train_seconds['torch']:.0f} s (sentence-transformers)"
              f"{'' if not args.threads else f', {args.threads} thread(s) a side'}."]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=2000, help="the first N training pairs")
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    add_recipe_arguments(parser, epochs=1)
    parser.add_argument("--dropout", type=float, help="every dropout rate of the encoder on both sides "
                                                      "(default: the model's, 0.1)")
    parser.add_argument("--threads", type=int, default=0, help="threads a side (0: each framework's default)")
    parser.add_argument("--init", help="a sentence-transformers directory both sides load (default: "
                                       "all-MiniLM-L6-v2)")
    parser.add_argument("--squad", default=str(SQUAD), help="SQuAD v1.1 dev JSON")
    parser.add_argument("--json", help="write every seed's results here")
    parser.add_argument("--write", action="store_true", help="store the report as BENCHMARKS.md's paired_embed "
                                                             "section")
    parser.add_argument("--side", choices=SIDES, help=argparse.SUPPRESS)  # a child process: train one side
    for flag in ("--train", "--dev", "--out", "--seed"):
        parser.add_argument(flag, help=argparse.SUPPRESS)
    parser.add_argument("--base", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.side:
        args.seed = int(args.seed)
        run_side(args)
        return 0
    squad_path = pathlib.Path(args.squad)
    if not squad_path.is_file():
        raise SystemExit(f"needs {squad_path}")
    if args.init is None:
        import kbert.pretrained

        args.init = kbert.pretrained.minilm_path()
    from benchmarks.common.report import load_average, publish

    load_start, began = load_average(), time.perf_counter()
    squad = json.loads(squad_path.read_text(encoding="utf-8"))
    pairs, dev = positive_pairs(squad, TRAIN_ARTICLES), dev_set(squad)
    if args.size > len(pairs) or args.size < args.batch_size:
        raise SystemExit(f"--size must be between --batch-size and the {len(pairs)} training pairs")
    runs: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="kbert-paired-embed-") as files:
        dev_file = pathlib.Path(files) / "dev.json"
        dev_file.write_text(json.dumps(dev), encoding="utf-8")
        for index, seed in enumerate(args.seeds):
            work = pathlib.Path(files) / f"seed_{seed}"
            work.mkdir()
            runs.append(run_seed(args, seed, dev_file, dev, pairs, work, base=index == 0))
            r = runs[-1]
            print(f"seed {seed}: " + ", ".join(f"{m} {r['kbert']['scores'][m]:.4f} / {r['torch']['scores'][m]:.4f}"
                                               for m in METRICS)
                  + f" (kbert / sentence-transformers); step-1 loss {r['first_loss'][0]:.6f} / "
                    f"{r['first_loss'][1]:.6f}; mean |loss difference| {r['mean_abs_loss_difference']:.2e}; "
                    f"{r['kbert']['wall_seconds']:.0f} s / {r['torch']['wall_seconds']:.0f} s", flush=True)
            if args.json:
                pathlib.Path(args.json).write_text(json.dumps({"settings": settings(args), "runs": runs}, indent=1)
                                                   + "\n", encoding="utf-8")
    publish("paired_embed", report(runs, args, dev, load_start, time.perf_counter() - began), write=args.write)
    return 0


def settings(args: argparse.Namespace) -> dict:
    return {k: (str(v) if isinstance(v, pathlib.Path) else v) for k, v in vars(args).items()
            if k not in ("side", "train", "dev", "out", "seed", "base", "json", "write")}


if __name__ == "__main__":
    sys.exit(main())
