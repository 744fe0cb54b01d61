"""Sentence embeddings on SQuAD v1.1 dev as retrieval: each question looks for its own paragraph.

all-MiniLM-L6-v2 scored by kbert's embed task (`EmbeddingTask.evaluate`) and by sentence-transformers'
`InformationRetrievalEvaluator` on the same held-out pairs (the same numbers, and the seconds each takes),
then fine-tuned by `kbert.finetune` on the pairs of the other articles (in-batch negatives) and scored again.
Articles are split, not questions: the first `--train-articles` of the 48 dev articles train, the rest are
held out, one question per paragraph (so every paragraph is one candidate).

    python -m benchmarks.studies.embedding_retrieval --epochs 1

Measured once (2-core Intel Xeon, shared and loaded, so the seconds are not a speed comparison): 1,019
held-out questions, recall@1 / recall@10 / mrr@10 / ndcg@10 = 0.6506 / 0.9274 / 0.7480 / 0.7918 by kbert and
by sentence-transformers alike; after one epoch on 1,024 pairs (batch 32, 2e-5, bf16), 0.7252 / 0.9568 /
0.8113 / 0.8471 (sentence-transformers, loading the fine-tuned directory: the same to 1e-4).
"""

from __future__ import annotations

import argparse
import json
import pathlib
import tempfile
import time

from benchmarks.common.report import command_line, cpu_name

SQUAD = pathlib.Path(__file__).resolve().parents[3] / "shared" / "data" / "squad_v1.1" / "dev-v1.1.json"


def pairs(articles: list[dict], questions_per_paragraph: int) -> list[dict[str, str]]:
    """(question, paragraph) rows: the first questions of each paragraph."""
    rows = []
    for article in articles:
        for paragraph in article["paragraphs"]:
            for qa in paragraph["qas"][:questions_per_paragraph]:
                rows.append({"text": " ".join(qa["question"].split()),
                             "text_pair": " ".join(paragraph["context"].split())})
    return rows


def write_jsonl(path: pathlib.Path, rows: list[dict[str, str]]) -> pathlib.Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def sentence_transformers_scores(path: pathlib.Path, rows: list[dict[str, str]]) -> tuple[dict, float]:
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.evaluation import InformationRetrievalEvaluator

    model = SentenceTransformer(str(path), device="cpu")
    evaluator = InformationRetrievalEvaluator(
        {str(i): r["text"] for i, r in enumerate(rows)}, {str(i): r["text_pair"] for i, r in enumerate(rows)},
        {str(i): {str(i)} for i in range(len(rows))}, mrr_at_k=[10], ndcg_at_k=[10], precision_recall_at_k=[1, 10],
        batch_size=64, write_csv=False)
    start = time.perf_counter()
    scores = evaluator(model)
    return {k: scores[f"cosine_{k}"] for k in ("recall@1", "recall@10", "mrr@10", "ndcg@10")}, \
        time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--squad", type=pathlib.Path, default=SQUAD, help="SQuAD v1.1 dev JSON")
    parser.add_argument("--train-articles", type=int, default=24)
    parser.add_argument("--questions-per-paragraph", type=int, default=1, help="training pairs per paragraph")
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--learning-rate", type=float, default=2e-5)
    parser.add_argument("--sequence-length", type=int, default=256)
    args = parser.parse_args()

    import kbert
    from kbert.tasks.embedding import EmbeddingTask, load_sentence_encoder

    articles = json.loads(args.squad.read_text(encoding="utf-8"))["data"]
    train, held_out = articles[:args.train_articles], articles[args.train_articles:]
    work = pathlib.Path(tempfile.mkdtemp(prefix="embed_bench_"))
    train_file = write_jsonl(work / "train.jsonl", pairs(train, args.questions_per_paragraph))
    held_rows = pairs(held_out, 1)
    held_file = write_jsonl(work / "held_out.jsonl", held_rows)
    minilm = kbert.pretrained.minilm_path()

    def kbert_scores(model) -> tuple[dict, float]:
        task = EmbeddingTask()
        examples = task.read_examples(held_file, split="validation")
        preprocessor = kbert.BertPreprocessor(model.tokenizer, model.preprocessor.sequence_length, padding="dynamic")
        start = time.perf_counter()
        metrics = task.evaluate(model, examples, preprocessor, batch_size=64, verbose=0)
        return metrics, time.perf_counter() - start

    before, kbert_seconds = kbert_scores(load_sentence_encoder(minilm))
    reference, st_seconds = sentence_transformers_scores(minilm, held_rows)
    started = time.perf_counter()
    result = kbert.finetune(EmbeddingTask(), kbert.FinetuneConfig(
        train=str(train_file), out=str(work / "tuned"), init=str(minilm), sequence_length=args.sequence_length,
        epochs=args.epochs, batch_size=args.batch_size, learning_rate=args.learning_rate, verbose=0))
    finetune_seconds = time.perf_counter() - started
    after, _ = kbert_scores(load_sentence_encoder(work / "tuned"))
    tuned_reference, _ = sentence_transformers_scores(work / "tuned", held_rows)

    names = ("recall@1", "recall@10", "mrr@10", "ndcg@10")
    print(f"| model, scorer ({len(held_rows)} held-out questions) | " + " | ".join(names) + " | seconds |")
    print("|---|" + "---|" * (len(names) + 1))
    for label, metrics, seconds in (("all-MiniLM-L6-v2, kbert", before, kbert_seconds),
                                    ("all-MiniLM-L6-v2, sentence-transformers", reference, st_seconds),
                                    ("fine-tuned by kbert, kbert", after, None),
                                    ("fine-tuned by kbert, sentence-transformers", tuned_reference, None)):
        cells = " | ".join(f"{metrics[n]:.4f}" for n in names)
        print(f"| {label} | {cells} | {'' if seconds is None else f'{seconds:.1f}'} |")
    print(f"\nfine-tuning: {result['train_examples']} pairs x {args.epochs} epoch(s), batch {args.batch_size}, "
          f"{finetune_seconds:.0f} s in all ({result['train_examples_per_second']:.1f} pairs/s); "
          f"{cpu_name()}; `{command_line()}`")


if __name__ == "__main__":
    main()
