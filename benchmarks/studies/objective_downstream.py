"""Does next-sentence prediction help fine-tuning? Pretrain one small BERT three ways, fine-tune each.

BERT (Devlin et al. 2018) pretrains on segment pairs with next-sentence prediction (NSP); ALBERT (Lan et al.
2019, arXiv:1909.11942) on the same pairs with sentence-order prediction (SOP); RoBERTa (Liu et al. 2019,
arXiv:1907.11692, section 4.2) drops the sentence task and packs full sentences, and finds that this "matches
or slightly improves downstream task performance". The three arms here share everything else:

- the start: the first phase of a `benchmarks/studies/pretrain_quality.py` run (RUN/model_phase1, masked LM
  alone at sequence 32, as every kbert recipe begins);
- the training text, vocabulary and held-out text of that run, the recipe of its last phase
  (`--recipe`, default recipes/pretrain_en_tiny.yaml), the steps, batch and seed; so the same tokens are
  seen (every instance is a full sequence of `sequence_length` tokens in all three arms);

and differ only in the data (`create_pretraining_data`'s objective and packing) and the sentence head:

    segment-pair+nsp   [CLS] A [SEP] B [SEP], B the next segment or a random one (BERT)
    segment-pair+sop   the same pairs, B after A or swapped (ALBERT)
    full-sentences     sentences packed across documents, masked LM alone (RoBERTa)

Each arm is then fine-tuned through `kbert finetune` on the language's tasks (and SQuAD with `--squad`),
`--seeds` each; the same seed runs the same fine-tuning shuffle in every arm, so the arms' differences
are paired by seed. The results JSON holds every score, each pair of arms' mean difference with its
95% t-interval over the seeds, and the minutes of each pretraining arm.

    python -m benchmarks.studies.objective_downstream --run runs/pair_bert --steps 1500 --dupe-factor 5 \\
        --squad --squad-seeds 0 1 --out notebooks/results/objective_downstream_en.json
"""

from __future__ import annotations

import argparse
import dataclasses
import glob
import itertools
import json
import pathlib
import sys
import time

from benchmarks.common.downstream import add_downstream_arguments, check_downstream, downstream_tasks, finetune_runs
from benchmarks.common.finetune_tasks import SQUAD
from benchmarks.common.seed_spread import paired_interval

REPO = pathlib.Path(__file__).resolve().parents[2]
# name: (objective, packing)
ARMS = {"segment-pair+nsp": ("nsp", "segment-pair"), "segment-pair+sop": ("sop", "segment-pair"),
        "full-sentences": ("none", "full-sentences")}
# SQuAD v1.1 dev, in articles: the first 40 to fine-tune on, the next 8 to score (as the paired fine-tuning study).
SQUAD_TASK = ("qa", SQUAD, SQUAD, "f1", ["--train-articles", "0:40", "--validation-articles", "40:48",
                                         "--sequence-length", "192", "--doc-stride", "64"])
def pretrain_arm(name: str, args: argparse.Namespace, run: pathlib.Path, work: pathlib.Path) -> dict:
    """Builds the arm's data from the run's training text and pretrains it from the run's first phase."""
    from kbert import PretrainConfig, pretrain
    from kbert.pretraining_data import CreatePretrainingDataConfig, create_pretraining_data

    objective, packing = ARMS[name]
    out, data = work / name / "model", work / name / "data"
    if (out / "history.json").exists():
        summary = json.loads((out / "history.json").read_text())
        return {"steps": summary["steps"], "minutes": summary["minutes"], "heldout": summary["heldout"],
                "seconds_per_step": summary.get("seconds_per_step")}
    recipe = PretrainConfig.from_file(args.recipe)
    if not (data / "metadata.json").exists():
        create_pretraining_data(CreatePretrainingDataConfig(
            input=sorted(glob.glob(str(run / "train" / "*.txt"))), vocab=str(run / "vocab.txt"), out=str(data),
            sequence_length=recipe.sequence_length, objective=objective, packing=packing, layout="paragraphs",
            masking="dynamic", dupe_factor=args.dupe_factor, num_shards=4, seed=args.seed))
    config = dataclasses.replace(
        recipe, train=str(data), out=str(out), init=str(run / "model_phase1"), objective=objective,
        packing=packing, layout="paragraphs", steps=args.steps, warmup_steps=max(1, args.steps // 10),
        max_minutes=None, heldout_text=str(run / "heldout" / "*.txt"), save_every_steps=max(1, args.steps // 4),
        keep_checkpoints=1, seed=args.seed, verbose=2)
    start = time.perf_counter()
    summary = pretrain(config)
    minutes = (time.perf_counter() - start) / 60
    history = out / "history.json"
    history.write_text(json.dumps({**json.loads(history.read_text()), "minutes": minutes}, indent=2) + "\n")
    return {"steps": summary["steps"], "minutes": minutes, "heldout": summary["heldout"],
            "seconds_per_step": summary.get("seconds_per_step")}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run", required=True,
                        help="a pretrain_quality output directory (model_phase1/, train/, heldout/, vocab.txt)")
    parser.add_argument("--arms", nargs="+", choices=sorted(ARMS), default=list(ARMS))
    parser.add_argument("--recipe", default=str(REPO / "recipes" / "pretrain_en_tiny.yaml"),
                        help="the pretraining recipe of every arm (its objective and steps are replaced)")
    parser.add_argument("--steps", type=int, default=1500, help="pretraining steps of every arm")
    parser.add_argument("--dupe-factor", type=int, default=2)
    parser.add_argument("--seed", type=int, default=12345, help="the pretraining seed of every arm")
    parser.add_argument("--pretrain-only", action="store_true", help="pretrain the arms, fine-tune nothing")
    parser.add_argument("--squad", action="store_true", help="fine-tune SQuAD v1.1 too (shared data)")
    parser.add_argument("--squad-seeds", nargs="+", type=int,
                        help="SQuAD's seeds, if not --seeds (a SQuAD run costs three of the others on a CPU)")
    add_downstream_arguments(parser)
    parser.add_argument("--out", required=True, help="results JSON")
    args = parser.parse_args(argv)

    run = pathlib.Path(args.run)
    if not (run / "model_phase1" / "kbert_config.json").is_file():
        parser.error(f"--run: {run} holds no finished first phase (model_phase1/)")
    tasks = {} if args.pretrain_only else dict(downstream_tasks(args))
    if args.squad and not args.pretrain_only:
        if not SQUAD.is_file():
            parser.error(f"--squad: {SQUAD} is missing")
        tasks["squad"] = SQUAD_TASK
    try:
        check_downstream({k: v for k, v in tasks.items() if k != "squad"}, args.max_train_examples)
    except ValueError as error:
        parser.error(str(error))

    work = run / "objective_downstream"
    pretraining = {name: pretrain_arm(name, args, run, work) for name in args.arms}
    scores: dict[str, dict] = {}
    commands: list[str] = []
    squad_args = argparse.Namespace(**{**vars(args), "seeds": args.squad_seeds or args.seeds})
    for name in args.arms if tasks else []:
        results, made = {}, []
        for task_args, subset in ((args, {k: v for k, v in tasks.items() if k != "squad"}),
                                  (squad_args, {k: v for k, v in tasks.items() if k == "squad"})):
            if subset:
                done, lines = finetune_runs(task_args, run, subset, work / name / "finetune",
                                            model=work / name / "model", inits=("pretrained",))
                results.update(done)
                made += lines
        commands += made
        for task, result in results.items():
            entry = scores.setdefault(task, {"metric": result["metric"], "scores": {}})
            if "error" in result:
                entry.setdefault("errors", {})[name] = result["error"]
                continue
            # kbert's SQuAD metrics are in points; as a fraction, as accuracy and entity F1 are
            entry["scores"][name] = [v / 100 for v in result["pretrained"]] if task == "squad" else result["pretrained"]
    for entry in scores.values():
        arms = [a for a in args.arms if a in entry["scores"]]
        entry["differences"] = {f"{a} - {b}": paired_interval(entry["scores"][a], entry["scores"][b])
                                for a, b in itertools.combinations(arms, 2) if len(entry["scores"][a]) > 1}
    result = {"run": str(run), "arms": {name: {"objective": ARMS[name][0], "packing": ARMS[name][1],
                                               **pretraining[name]} for name in args.arms},
              "steps": args.steps, "recipe": pathlib.Path(args.recipe).name, "seeds": args.seeds,
              "squad_seeds": (args.squad_seeds or args.seeds) if args.squad else [],
              "downstream": scores, "finetune_commands": commands,
              "command": " ".join(["python -m benchmarks.studies.objective_downstream",
                                   *(sys.argv[1:] if argv is None else argv)])}
    pathlib.Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    pathlib.Path(args.out).write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    for name, arm in result["arms"].items():
        print(f"{name}: {arm['steps']} steps in {arm['minutes']:.1f} min, held-out masked LM "
              f"{arm['heldout'].get('mlm_accuracy', float('nan')):.3f}")
    for task, entry in scores.items():
        for pair, d in entry["differences"].items():
            print(f"{task} {pair}: {d['mean']:+.4f} [{d['low']:+.4f}, {d['high']:+.4f}] over {d['n']} seeds")
    return 1 if any("errors" in entry for entry in scores.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
