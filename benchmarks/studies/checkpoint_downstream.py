"""Downstream quality over pretraining steps: fine-tune chosen checkpoints of a pretraining run.

The third axis of "Pretrained Language Model Embryology: The Birth of ALBERT" (Chiang, Huang and Lee,
EMNLP 2020, arXiv:2010.02480): does fine-tuned quality keep rising with the pretraining steps, or level
off early? A run of `benchmarks/studies/pretrain_quality.py` keeps a checkpoint every few hundred steps
(`ckpt-*.weights.h5`, one folder a phase); this study turns the chosen ones into pretrained models and
fine-tunes each on the language's downstream tasks through `kbert finetune`, `--seeds` each. Step 0 is the
same architecture from random weights (`--no-random` leaves it out); the run's last step is its final model.

    python -m benchmarks.studies.checkpoint_downstream --run runs/pair_albert --checkpoints 5 \\
        --out notebooks/results/checkpoint_downstream_albert_en.json

It writes the results JSON (`{"steps": [...], "downstream": {task: {"metric", "scores": {step: [...]},
"differences": {"LATER - EARLIER": mean, 95% t-interval over the seeds}}}}`)
and keeps every fine-tuning run under RUN/checkpoint_finetune/step_N/; a second call with `--resume` keeps
the finished ones.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import statistics
import sys

from benchmarks.common.downstream import add_downstream_arguments, check_downstream, downstream_tasks, finetune_runs
from benchmarks.studies.embryology import checkpoint_steps
from benchmarks.common.seed_spread import paired_interval


def run_checkpoints(run: pathlib.Path) -> list[tuple[str, int]]:
    """(weights, whole-run step) of every checkpoint of `run`'s phases, its final model last."""
    phases = sorted(run.glob("model_phase*"), key=lambda p: int(p.name[len("model_phase"):])) + [run / "model"]
    found = checkpoint_steps([str(p / "checkpoints" / "ckpt-*.weights.h5") for p in phases])
    total = sum(json.loads((p / "history.json").read_text())["steps"] for p in phases)
    return [c for c in found if c[1] < total] + [(str(run / "model"), total)]


def choose(checkpoints: list[tuple[str, int]], count: int) -> list[tuple[str, int]]:
    """`count` checkpoints spread evenly over the run's steps, the last one always among them.

    Example:
    >>> [s for _, s in choose([("a", 500), ("b", 1000), ("c", 1500), ("d", 2000), ("e", 2600)], 3)]
    [1000, 1500, 2600]
    """
    if count >= len(checkpoints):
        return list(checkpoints)
    last = checkpoints[-1][1]
    chosen = []
    for i in range(1, count + 1):  # the checkpoint nearest each of count evenly spaced targets
        target = last * i / count
        best = min((c for c in checkpoints if c not in chosen), key=lambda c: abs(c[1] - target))
        chosen.append(best)
    return sorted(chosen, key=lambda c: c[1])


def checkpoint_model(run: pathlib.Path, weights: str, out: pathlib.Path) -> pathlib.Path:
    """The encoder of a pretraining checkpoint as a pretrained model directory (the run's config and vocabulary)."""
    import kbert
    from kbert.convert.checkpoints import save_pretrained

    if (out / "kbert_config.json").exists():
        return out
    if pathlib.Path(weights) == run / "model":
        return run / "model"
    pretrainer = kbert.load_pretrainer(run / "model", objective="none")
    pretrainer.load_weights(weights)
    tokenizer = kbert.load_tokenizer(run / "model")
    save_pretrained(pretrainer.encoder, out, vocabulary=tokenizer)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run", required=True, help="a pretrain_quality output directory (model/, vocab.txt)")
    parser.add_argument("--checkpoints", type=int, default=5, help="how many checkpoints, spread over the run")
    parser.add_argument("--steps", nargs="+", type=int, help="the whole-run steps to fine-tune instead")
    parser.add_argument("--no-random", action="store_true", help="leave out step 0 (random weights)")
    add_downstream_arguments(parser)
    parser.add_argument("--out", required=True, help="results JSON")
    args = parser.parse_args(argv)

    run = pathlib.Path(args.run)
    if not (run / "model" / "history.json").is_file():
        parser.error(f"--run: {run} holds no finished pretraining run (model/history.json)")
    checkpoints = run_checkpoints(run)
    if args.steps:
        by_step = dict((step, path) for path, step in checkpoints)
        missing = sorted(set(args.steps) - set(by_step))
        if missing:
            parser.error(f"--steps: no checkpoint at {missing}; the run's are {sorted(by_step)}")
        chosen = [(by_step[s], s) for s in sorted(set(args.steps))]
    else:
        chosen = choose(checkpoints, args.checkpoints)
    tasks = downstream_tasks(args)
    try:
        check_downstream(tasks, args.max_train_examples)
    except ValueError as error:
        parser.error(str(error))

    work = run / "checkpoint_finetune"
    scores: dict[str, dict] = {}
    commands: list[str] = []
    starts = ([(None, 0)] if not args.no_random else []) + chosen
    for weights, step in starts:
        runs = work / f"step_{step}"
        if weights is None:
            results, made = finetune_runs(args, run, tasks, runs, inits=("random",))
        else:
            model = checkpoint_model(run, weights, work / f"model_{step}")
            results, made = finetune_runs(args, run, tasks, runs, model=model, inits=("pretrained",))
        commands += made
        for name, task in results.items():
            entry = scores.setdefault(name, {"metric": task["metric"], "scores": {}})
            if "error" in task:
                entry["error"] = task["error"]
                continue
            entry["scores"][str(step)] = task["random" if weights is None else "pretrained"]
            print(f"step {step} {name}: {statistics.mean(entry['scores'][str(step)]):.4f}", flush=True)
    for entry in scores.values():  # every later step against every earlier one, paired by seed
        steps = sorted(entry["scores"], key=int)
        entry["differences"] = {f"{later} - {earlier}": paired_interval(entry["scores"][later], entry["scores"][earlier])
                                for i, earlier in enumerate(steps) for later in steps[i + 1:]
                                if len(entry["scores"][later]) > 1}
    config = json.loads((run / "model" / "history.json").read_text())["config"]
    result = {"run": str(run), "model_type": config.get("model_type"), "steps": [s for _, s in starts],
              "seeds": args.seeds, "max_train_examples": args.max_train_examples,
              "finetune_epochs": args.finetune_epochs, "downstream": scores, "finetune_commands": commands,
              "command": " ".join(["python -m benchmarks.studies.checkpoint_downstream",
                                  *(sys.argv[1:] if argv is None else argv)])}
    pathlib.Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    pathlib.Path(args.out).write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {args.out}")
    return 1 if any("error" in task for task in scores.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
