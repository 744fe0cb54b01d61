"""The three pretraining arms of `objective_downstream`, fine-tuned in transformers + PyTorch with many seeds.

`benchmarks.studies.objective_downstream` pretrains one small BERT three ways (segment pairs with NSP, with
SOP, and full sentences without a sentence task) and fine-tunes each through `kbert finetune` with a few
seeds: on two CPU cores a seed of the three tasks costs about six minutes an arm. Whether the arms differ
needs more seeds than that. This study takes the same three pretrained encoders (exported in Hugging Face's
layout) and fine-tunes them with the reference job (`benchmarks.common.hf_reference`: transformers +
PyTorch, the same recipe and flags), which runs anywhere PyTorch does, a GPU included, with no
TensorFlow. Scores are computed here with kbert's own rules (entity F1, SQuAD span decoding on kbert's
windows), as `benchmarks.finetune_quality` scores its reference.

Three steps:

    # here: the arms' encoders, the task files and SQuAD's windows, and one command line a job (jobs.txt)
    python -m benchmarks.studies.objective_reference prepare --run runs/pair_bert --seeds 20 --work runs/objective_reference
    # wherever PyTorch is (runs/objective_reference is all it reads; results go to RESULTS/ARM/TASK/SEED)
    RESULTS=out xargs -d '\\n' -P 12 -I{} sh -c {} < runs/objective_reference/jobs.txt
    # here: the scores, each pair of arms' difference with its 95% interval over the seeds
    python -m benchmarks.studies.objective_reference score --work runs/objective_reference --results out \\
        --out notebooks/results/objective_reference_en.json
"""

from __future__ import annotations

import argparse
import itertools
import json
import pathlib
import shutil
import statistics
import sys

from benchmarks.common.downstream import DOWNSTREAM, FINETUNE_EPOCHS, FINETUNE_LEARNING_RATE
from benchmarks.common.finetune_tasks import SquadWindows, read_json
from benchmarks.common.hf_reference import read_conll
from benchmarks.common.seed_spread import paired_interval, seeds_to_resolve
from benchmarks.studies.objective_downstream import ARMS

# The SQuAD windows of objective_downstream's SQUAD_TASK: 192 tokens, stride 64, articles 0-40 / 40-48.
SQUAD_SEQUENCE_LENGTH, SQUAD_DOC_STRIDE = 192, 64


def prepare(args: argparse.Namespace) -> int:
    """Writes WORK/ARM (each arm's encoder, Hugging Face layout), WORK/data and WORK/jobs.txt."""
    import numpy as np

    import kbert
    from kbert.convert.checkpoints import save_pretrained

    run, work = pathlib.Path(args.run), pathlib.Path(args.work)
    arms = run / "objective_downstream"
    missing = [name for name in ARMS if not (arms / name / "model" / "history.json").is_file()]
    if missing:
        raise SystemExit(f"{arms} lacks the finished arms {missing}: run benchmarks.studies.objective_downstream first")
    (work / "data").mkdir(parents=True, exist_ok=True)
    for name in ARMS:
        model = arms / name / "model"
        save_pretrained(kbert.load_pretrained(model), work / name, format="hf", vocabulary=kbert.load_tokenizer(model),
                        lowercase=True)
    tasks = DOWNSTREAM["en"]
    for task in ("sst2", "conll2003"):
        _, train, validation, _, _ = tasks[task]
        for path in (train, validation):
            shutil.copy(path, work / "data" / f"{task}_{pathlib.Path(path).name}")
    windows = SquadWindows(argparse.Namespace(init=str(arms / "full-sentences" / "model"),
                                              squad_sequence_length=SQUAD_SEQUENCE_LENGTH,
                                              doc_stride=SQUAD_DOC_STRIDE), None)
    windows.prepare(0, work / "data")  # all training questions (size 0: no limit)
    with np.load(work / "data" / "windows.npz") as stored:  # 10x smaller: the jobs' folder travels
        arrays = {name: stored[name] for name in stored.files}
    if max(int(arrays["train_token_ids"].max()), int(arrays["dev_token_ids"].max())) >= 2 ** 15:
        raise SystemExit("windows.npz: token ids do not fit int16")
    np.savez_compressed(work / "data" / "windows.npz", **{
        name: array.astype(np.int16 if "token_ids" in name or "positions" in name else np.int8)
        for name, array in arrays.items()})
    common = (f"--epochs {args.finetune_epochs} --learning-rate {args.finetune_learning_rate} --batch-size 32 "
              f"--device {args.device} --threads 1")
    lines = []
    for seed, name in itertools.product(range(args.seeds), ARMS):
        # `$RESULTS` is read where the jobs run; each job writes RESULTS/ARM/TASK/SEED.
        out = f"$RESULTS/{name}/{{task}}/{seed}"
        init = f"{work}/{name}"
        lines.append(f"python3 -m benchmarks.common.hf_reference classify --init {init} "
                     f"--train {work}/data/sst2_train.tsv --validation {work}/data/sst2_dev.tsv --text-column sentence "
                     f"--label-column label --sequence-length 64 --max-train-examples {args.max_train_examples} "
                     f"--seed {seed} {common} --out {out.format(task='sst2')} > /dev/null")
        lines.append(f"python3 -m benchmarks.common.hf_reference tag --init {init} "
                     f"--train {work}/data/conll2003_train.txt --validation {work}/data/conll2003_test.txt "
                     f"--sequence-length 128 --max-train-examples {args.max_train_examples} "
                     f"--seed {seed} {common} --out {out.format(task='conll2003')} > /dev/null")
        if seed < args.squad_seeds:
            lines.append(f"python3 -m benchmarks.common.hf_reference qa --init {init} --features {work}/data/windows.npz "
                         f"--sequence-length {SQUAD_SEQUENCE_LENGTH} --seed {seed} {common} "
                         f"--logits-dtype float16 --out {out.format(task='squad')} > /dev/null")
    (work / "jobs.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"{len(lines)} jobs in {work / 'jobs.txt'}")
    return 0


def score(args: argparse.Namespace) -> int:
    """Scores every finished job by kbert's rules and writes the results JSON."""
    import numpy as np
    from kbert.metrics import entity_scores, squad_evaluate
    from kbert.tasks.span_decoding import decode_answers

    work, results = pathlib.Path(args.work), pathlib.Path(args.results)
    gold = [tags for _, tags in read_conll(str(work / "data" / "conll2003_test.txt"), None)]
    windows = None  # SQuAD's dev windows, built once a QA job is found
    scores: dict[str, dict[str, dict[int, float]]] = {}
    for name in ARMS:
        for job in sorted((results / name).glob("*/*/metrics.json")):
            task, seed = job.parent.parent.name, int(job.parent.name)
            if task == "sst2":
                value = read_json(job)["accuracy"]
            elif task == "conll2003":
                value = entity_scores(gold, read_json(job.parent / "predictions.json"))["f1"]
            else:
                if windows is None:
                    windows = SquadWindows(argparse.Namespace(init=str(work / "full-sentences"),
                                                              squad_sequence_length=SQUAD_SEQUENCE_LENGTH,
                                                              doc_stride=SQUAD_DOC_STRIDE), None)
                    windows.dev_features = windows._features(windows.dev)
                logits = np.load(job.parent / "logits.npz")
                answers = decode_answers(windows.dev, windows.dev_features, logits["start_logits"].astype(np.float32),
                                         logits["end_logits"].astype(np.float32))
                value = squad_evaluate(windows.dev, answers)["f1"] / 100
            scores.setdefault(task, {}).setdefault(name, {})[seed] = value
    summary = {}
    for task, by_arm in scores.items():
        seeds = sorted(set.intersection(*(set(s) for s in by_arm.values()))) if len(by_arm) == len(ARMS) else []
        entry = {"seeds": len(seeds), "mean": {a: statistics.fmean(by_arm[a][s] for s in seeds) for a in by_arm if seeds},
                 "std": {a: statistics.stdev(by_arm[a][s] for s in seeds) for a in by_arm if len(seeds) > 1},
                 "scores": {a: [by_arm[a][s] for s in seeds] for a in by_arm}, "differences": {}}
        for a, b in itertools.combinations(ARMS, 2):
            if len(seeds) > 1:
                d = paired_interval([by_arm[a][s] for s in seeds], [by_arm[b][s] for s in seeds])
                d["seeds_to_resolve"] = seeds_to_resolve(d["std"], abs(d["mean"]))
                entry["differences"][f"{a} - {b}"] = d
        summary[task] = entry
    result = {"framework": "transformers + PyTorch (benchmarks.common.hf_reference)", "work": str(work),
              "device": args.device_name, "finetune_epochs": args.finetune_epochs, "downstream": summary}
    pathlib.Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    pathlib.Path(args.out).write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    for task, entry in summary.items():
        print(f"{task} ({entry['seeds']} seeds): " + ", ".join(f"{a} {m:.4f}" for a, m in entry["mean"].items()))
        for pair, d in entry["differences"].items():
            print(f"    {pair}: {d['mean']:+.4f} [{d['low']:+.4f}, {d['high']:+.4f}]")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    steps = parser.add_subparsers(dest="step", required=True)
    make = steps.add_parser("prepare", help="export the arms, copy the data, write jobs.txt")
    make.add_argument("--run", required=True, help="the --run of objective_downstream (its arms are in it)")
    make.add_argument("--work", required=True, help="the folder the jobs read")
    make.add_argument("--seeds", type=int, default=20, help="fine-tuning seeds 0..N-1 of SST-2 and CoNLL-2003")
    make.add_argument("--squad-seeds", type=int, default=10, help="seeds 0..N-1 of SQuAD")
    make.add_argument("--device", default="cuda")
    make.add_argument("--max-train-examples", type=int, default=20000)
    for sub in (make, steps.add_parser("score", help="score the jobs' outputs")):
        sub.add_argument("--finetune-epochs", type=int, default=FINETUNE_EPOCHS)
        sub.add_argument("--finetune-learning-rate", type=float, default=FINETUNE_LEARNING_RATE)
    judge = steps.choices["score"]
    judge.add_argument("--work", required=True)
    judge.add_argument("--results", required=True, help="the RESULTS folder the jobs wrote")
    judge.add_argument("--device-name", default="", help="where the jobs ran, for the record")
    judge.add_argument("--out", required=True, help="results JSON")
    args = parser.parse_args(argv)
    return prepare(args) if args.step == "prepare" else score(args)


if __name__ == "__main__":
    sys.exit(main())
