"""NSP vs SOP on a model that already models words: continue one pretrained run with each sentence objective.

ALBERT (Lan et al. 2019, arXiv:1909.11942) argues that next-sentence prediction is easy because a
random "next" segment comes from another document, so topic gives the answer away, while sentence-order
prediction (the same two segments, swapped or not) cannot be solved by topic. The argument needs a
model that already tells topics apart; a model at the unigram rate cannot show it. So both objectives
start here from the same masked-LM-only checkpoint (`benchmarks/studies/pretrain_quality.py`'s model), with a
fresh sentence head, the same steps, batch, learning rate and seed, and are scored on held-out text at
every checkpoint (`kbert pretrain --heldout-text`).

    python -m benchmarks.studies.sentence_objectives --run runs/en --steps 1500 --out notebooks/results/nsp_sop_en.json
"""

from __future__ import annotations

import argparse
import glob
import json
import pathlib
import sys
import time

REPO = pathlib.Path(__file__).resolve().parents[2]


def continue_with(objective: str, args: argparse.Namespace, run: pathlib.Path, work: pathlib.Path) -> dict:
    """Builds `objective` data from the run's training text, continues the run's model on it, reads the curve."""
    from kbert.pretraining_data import CreatePretrainingDataConfig, create_pretraining_data
    from kbert import PretrainConfig, pretrain

    data = work / f"data_{objective}"
    if not (data / "metadata.json").exists():
        create_pretraining_data(CreatePretrainingDataConfig(
            input=sorted(glob.glob(str(run / "train" / "*.txt"))), vocab=str(run / "model" / "vocab.txt"),
            out=str(data), sequence_length=args.max_seq_length, objective=objective, layout="paragraphs",
            masking="dynamic", dupe_factor=args.dupe_factor, num_shards=2))
    out = work / objective
    start = time.perf_counter()
    summary = pretrain(PretrainConfig(
        train=str(data), out=str(out), init=str(run / "model"), objective=objective, steps=args.steps,
        batch_size=args.batch_size, learning_rate=args.learning_rate, warmup_steps=args.steps // 10,
        sequence_length=args.max_seq_length, layout="paragraphs", heldout_text=str(run / "heldout" / "*.txt"),
        heldout_max_instances=args.heldout_max_instances, save_every_steps=max(1, args.steps // args.evaluations),
        seed=args.seed, encoder_dropout=args.dropout, verbose=2, mixed_precision="none"))  # float32, as recorded
    curve = [json.loads(p.read_text()) for p in sorted((out / "heldout").glob("step_*.json"))]
    return {"steps": [c["step"] for c in curve],
            "sentence_accuracy": [c["sentence_accuracy"] for c in curve],
            "mlm_accuracy": [c["mlm_accuracy"] for c in curve],
            "train_sentence_accuracy": summary["history"].get("sentence_accuracy", []),
            "minutes": (time.perf_counter() - start) / 60}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run", required=True, help="a pretrain_quality output directory (model/, train/, heldout/)")
    parser.add_argument("--out", required=True, help="results JSON")
    parser.add_argument("--work", help="where the data and runs go (default: RUN/sentence_objectives)")
    parser.add_argument("--objectives", nargs="+", default=["nsp", "sop"], choices=["nsp", "sop"])
    parser.add_argument("--steps", type=int, default=1500)
    parser.add_argument("--evaluations", type=int, default=10, help="held-out evaluations over the run")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--learning-rate", type=float, default=5e-4)
    parser.add_argument("--max-seq-length", type=int, default=128)
    parser.add_argument("--dupe-factor", type=int, default=2)
    parser.add_argument("--heldout-max-instances", type=int, default=2048)
    parser.add_argument("--seed", type=int, default=12345)
    parser.add_argument("--dropout", type=float,
                        help="both dropout rates while continuing (default: the model's saved rates)")
    args = parser.parse_args(argv)
    run = pathlib.Path(args.run)
    if not (run / "model" / "kbert_config.json").exists():
        raise SystemExit(f"{run}/model holds no finished pretraining run")
    work = pathlib.Path(args.work or run / "sentence_objectives")
    work.mkdir(parents=True, exist_ok=True)
    results = {objective: continue_with(objective, args, run, work) for objective in args.objectives}
    results["settings"] = {k: v for k, v in vars(args).items() if k not in ("out", "work")}
    pathlib.Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    pathlib.Path(args.out).write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
    for objective in args.objectives:
        curve = results[objective]
        print(f"{objective.upper()}: held-out sentence accuracy {curve['sentence_accuracy'][-1]:.3f} "
              f"(best {max(curve['sentence_accuracy']):.3f}), masked LM {curve['mlm_accuracy'][-1]:.3f}, "
              f"{curve['minutes']:.1f} min")
    return 0


if __name__ == "__main__":
    sys.exit(main())
