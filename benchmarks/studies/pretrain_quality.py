"""Does kbert's own pretraining pay off? Pretrain with a recipe for N minutes, then fine-tune it and a random init.

One command, five stages, all in `OUT`:

1. text: the recipe's corpora (`recipes/README.md`), with 5% held out (every 20th block of 100 lines of
   each English source, every 20th Chinese document), or `--corpus` files and `--heldout-text FILE`;
2. `kbert vocab` (8,000 tokens, uncased);
3. `kbert.pretraining_data.create_pretraining_data` (dynamic masks, the recipe's layout and dupe factor);
4. `kbert.training.pretrain` with the language's recipe for `--minutes` in all (two phases,
   `recipes/pretrain_LANG_tiny_seq32.yaml` then `pretrain_LANG_tiny.yaml` from its weights), each phase
   given its share of the time and scored on the held-out text. Each phase's step is timed first on
   this machine (`--calibration-steps`, 50; the timing counts against `--minutes`), so its step count,
   and with it the learning-rate decay, fills its share whatever the machine's speed;
5. `kbert finetune classify|tag` through the CLI for the pretrained model and for the same architecture
   from random weights, `--seeds` each, on each downstream task.

It writes `OUT/results.json` (`{"heldout_mlm_accuracy", "steps", "minutes", "downstream": {task: {"metric",
"pretrained": [...], "random": [...], "training_loss_by_epoch": ...}}, "heldout_curve": [...]}`) and
`OUT/BENCHMARKS_section.md`, and prints the section. `--resume` keeps what a stopped call finished (the
pretraining run, each fine-tuning run with its metrics.json) and does the rest.

    python -m benchmarks.studies.pretrain_quality --lang en --minutes 60 --out runs/quality_en
    python -m benchmarks.studies.pretrain_quality --lang zh --minutes 10 --out runs/quality_zh_quick
    python -m benchmarks.studies.pretrain_quality --lang en --minutes 5 --out runs/q --downstream train.tsv dev.tsv \\
        --text-column sentence --label-column label
"""

from __future__ import annotations

import argparse
import dataclasses
import glob
import json
import os
import pathlib
import platform
import shutil
import statistics
import sys
import time

from benchmarks.common.downstream import (FINETUNE_EPOCHS, FINETUNE_LEARNING_RATE, check_downstream, downstream_tasks,
                                          finetune_runs)

REPO = pathlib.Path(__file__).resolve().parents[2]
DATA = REPO.parent / "shared" / "data"
CORPORA = DATA / "corpora"

LANGUAGES = {
    "en": {"corpus": [f"{CORPORA}/en_gutenberg_nltk/*.txt", f"{CORPORA}/wikitext2_raw/wiki.test.raw"],
           "extra": (DATA / "sst2" / "train.tsv", 0, 50), "layout": "paragraphs", "dupe_factor": 5,
           "recipes": ["pretrain_en_tiny_seq32.yaml", "pretrain_en_tiny.yaml"]},
    "zh": {"corpus": [f"{CORPORA}/zh_corpus/CLUECorpusSmall_bert_sampled.txt"],
           "extra": (DATA / "zh_book_review" / "train.tsv", 1, 20), "layout": "paragraphs", "dupe_factor": 10,
           "recipes": ["pretrain_zh_tiny_seq32.yaml", "pretrain_zh_tiny.yaml"]},
}
# A timed phase's steps fill this share of its minutes: the rest is for its held-out evaluations and
# checkpoints, which made the English phases' steps 4% (phase 2) and 7% (phase 1) longer than timed.
STEP_BUDGET_SHARE = 0.95


def split_heldout(path: pathlib.Path, train: pathlib.Path, heldout: pathlib.Path | None, lang: str) -> None:
    """Writes `path` to `train`, holding 5% out into `heldout` (None: everything is training text).

    English: every 20th block of 100 lines. Chinese (one sentence a line, blank lines between documents):
    every 20th document. The same rules as the shell commands of recipes/README.md.
    """
    lines = path.read_bytes().decode("utf-8", "replace").splitlines()
    if lang == "en":
        keep = [(i // 100) % 20 != 19 for i in range(len(lines))]
    else:
        keep, document = [], 0
        for line in lines:
            keep.append(document % 20 != 19)
            document += not line.strip()
    train.write_text("\n".join(l for l, k in zip(lines, keep) if k or heldout is None) + "\n", encoding="utf-8")
    if heldout is not None:
        held = "\n".join(l for l, k in zip(lines, keep) if not k)
        if held.strip():
            heldout.write_text(held + "\n", encoding="utf-8")


def write_extra(tsv: pathlib.Path, column: int, group: int, out: pathlib.Path) -> None:
    """The text column of a labelled TSV as extra pretraining text, `group` rows to a document."""
    rows = tsv.read_text(encoding="utf-8").splitlines()[1:]
    texts = [r.split("\t")[column] for r in rows if r.count("\t") >= column]
    out.write_text("".join(t + ("\n\n" if (i + 1) % group == 0 else "\n") for i, t in enumerate(texts)),
                   encoding="utf-8")


def prepare_text(args: argparse.Namespace, work: pathlib.Path) -> tuple[list[str], str]:
    """The training files and the held-out glob."""
    spec = LANGUAGES[args.lang]
    files = [pathlib.Path(f) for pattern in (args.corpus or spec["corpus"]) for f in sorted(glob.glob(str(pattern)))]
    if not files:
        raise SystemExit(f"no corpus file matches {args.corpus or spec['corpus']}")
    (work / "train").mkdir(parents=True, exist_ok=True)
    (work / "heldout").mkdir(exist_ok=True)
    for path in files:
        name = path.stem + ".txt"
        split_heldout(path, work / "train" / name, None if args.heldout_text else work / "heldout" / name, args.lang)
    if not args.heldout_text and not list((work / "heldout").glob("*.txt")):
        raise SystemExit("The corpus is too small for the 5% held-out split (2,000 lines a file); "
                         "give --heldout-text.")
    extra, column, group = spec["extra"]
    if not args.corpus and extra.exists():
        write_extra(extra, column, group, work / "train" / f"{extra.parent.name}_train.txt")
    return sorted(str(p) for p in (work / "train").glob("*.txt")), args.heldout_text or str(work / "heldout" / "*.txt")


def phase_budgets(recipes: list, minutes: float, seconds_per_step: float | list[float]) -> list[tuple[float, int]]:
    """(minutes, steps) for each phase of a recipe within `minutes` in all.

    The phases share the time in proportion to their `max_minutes` guards (equally where a recipe has
    none). `seconds_per_step` is one figure for every phase or a list with one a phase. A phase whose
    step was timed on this machine (a list entry) gets the steps that fill `STEP_BUDGET_SHARE` of its share, so its
    learning rate decays to 0 as its time runs out. Given one figure, a recipe with a guard is sized as
    its file says, its steps scaled by the share it gets; one without takes the figure to size its steps.
    """
    guards = [r.max_minutes or minutes / len(recipes) for r in recipes]
    timed = isinstance(seconds_per_step, list)
    budgets = []
    for i, (recipe, guard) in enumerate(zip(recipes, guards)):
        share = minutes * guard / sum(guards)
        if timed:
            steps = STEP_BUDGET_SHARE * share * 60 / seconds_per_step[i]
        elif recipe.max_minutes:
            steps = recipe.steps * share / recipe.max_minutes
        else:
            steps = share * 60 / seconds_per_step
        budgets.append((share, max(10, int(steps))))
    return budgets


def time_step(recipe, data: pathlib.Path, out: pathlib.Path, steps: int) -> float:
    """Seconds a step of `recipe` takes on this machine: a short run of it from random weights on `data`."""
    from kbert.training.pretrain import pretrain

    probe = dataclasses.replace(recipe, train=str(data), out=str(out), init=None, steps=steps,
                                warmup_steps=0, max_minutes=None, heldout_text=None, heldout_data=None,
                                save_every_steps=steps, keep_checkpoints=1, tensorboard=False, verbose=0)
    seconds = pretrain(probe)["seconds_per_step"]
    shutil.rmtree(out, ignore_errors=True)
    return seconds


def pretrain_stage(args: argparse.Namespace, work: pathlib.Path, train_files: list[str], heldout: str) -> dict:
    """Vocabulary, data and pretraining, one phase after the other; returns the last phase's summary
    with the steps and minutes of all phases and a `phases` list.

    With `--calibration-steps N`, each phase's step is first timed over N steps, that time is taken off
    `--minutes`, and each phase gets the steps that fill its share of the rest (`phase_budgets`).
    """
    from kbert.cli.main import main
    from kbert.pretraining_data import CreatePretrainingDataConfig, create_pretraining_data
    from kbert import PretrainConfig, pretrain

    spec = LANGUAGES[args.lang]
    paths = args.recipe or [REPO / "recipes" / name for name in spec["recipes"]]
    recipes = [PretrainConfig.from_file(path) for path in paths]
    # The last phase is the model the downstream runs start from; earlier ones are kept beside it.
    outs = [work / f"model_phase{i + 1}" for i in range(len(recipes) - 1)] + [work / "model"]
    # The last phase's data is `data`, beside `model`, where the analyses of a run look for it.
    datas = [work / ("data" if out == outs[-1] else f"data_seq{r.sequence_length}") for r, out in zip(recipes, outs)]
    finished = [args.resume and (out / "history.json").exists() for out in outs]
    vocab = work / "vocab.txt"
    if not (args.resume and vocab.exists()) and main(
            ["vocab", "--input", *train_files, "--size", str(args.vocab_size), "--lowercase", "--quiet",
             "--out", str(vocab)]) != 0:
        raise SystemExit("kbert vocab failed")
    for recipe, data, done in zip(recipes, datas, finished):
        if not done:
            made = create_pretraining_data(CreatePretrainingDataConfig(
                input=train_files, vocab=str(vocab), out=str(data), sequence_length=recipe.sequence_length,
                objective=recipe.objective or "none", whole_word_masking=args.lang == "zh", language=args.lang,
                layout=spec["layout"], masking="dynamic", dupe_factor=spec["dupe_factor"], num_shards=4))
            print(f"{made['num_instances']} instances of {recipe.sequence_length} in {made['seconds']:.0f} s", flush=True)
    minutes, seconds_per_step = args.minutes, args.seconds_per_step
    calibration = {}
    if args.calibration_steps and not all(finished):
        start, seconds_per_step = time.perf_counter(), []
        for i, (recipe, data, done) in enumerate(zip(recipes, datas, finished)):
            seconds_per_step.append(args.seconds_per_step if done else  # a finished phase is not rerun
                                    time_step(recipe, data, work / f"calibration_phase{i + 1}", args.calibration_steps))
        calibration = {"steps": args.calibration_steps, "seconds_per_step": seconds_per_step,
                       "minutes": (time.perf_counter() - start) / 60}
        minutes -= calibration["minutes"]
        print(f"step times {', '.join(f'{s * 1e3:.0f} ms' for s in seconds_per_step)} "
              f"({calibration['minutes']:.1f} min to time them)", flush=True)
    phases, init = [], None
    for path, recipe, out, data, done, (phase_minutes, steps) in zip(
            paths, recipes, outs, datas, finished, phase_budgets(recipes, minutes, seconds_per_step)):
        history = out / "history.json"  # written by pretrain; the wall time joins it for --resume
        if done:
            print(f"--resume: {out} is a finished run; this phase is skipped", flush=True)
            summary = json.loads(history.read_text())
            if "minutes" not in summary and (work / "results.json").exists():  # a run that predates the field
                summary["minutes"] = json.loads((work / "results.json").read_text())["minutes"]
        else:
            recipe.train, recipe.out, recipe.heldout_text = str(data), str(out), heldout
            recipe.init = recipe.init or init
            recipe.steps, recipe.max_minutes, recipe.verbose = steps, phase_minutes, 2
            recipe.warmup_steps = min(recipe.warmup_steps or steps // 10, steps // 10)
            recipe.save_every_steps = max(1, min(recipe.save_every_steps, steps // 4))
            start = time.perf_counter()
            summary = pretrain(recipe)
            summary["minutes"] = (time.perf_counter() - start) / 60
            history.write_text(json.dumps({**json.loads(history.read_text()), "minutes": summary["minutes"]},
                                          indent=2) + "\n")
        phases.append({"recipe": os.path.relpath(path, REPO), "max_seq_length": recipe.sequence_length,
                       "steps": summary["steps"], "minutes": summary["minutes"],
                       "seconds_per_step": summary.get("seconds_per_step"),
                       "heldout_mlm_accuracy": summary["heldout"].get("mlm_accuracy"),
                       "heldout_curve": [json.loads(p.read_text())
                                         for p in sorted((out / "heldout").glob("step_*.json"))]})
        init = str(out)
    return {**summary, "steps": sum(p["steps"] for p in phases), "minutes": sum(p["minutes"] for p in phases),
            "phases": phases, "calibration": calibration}


def encoder_parameters(model: pathlib.Path) -> int:
    """The pretrained encoder's parameter count, pooler included (the head is not counted)."""
    from kbert import load_pretrained

    return int(load_pretrained(str(model)).count_params())


def markdown(results: dict, args: argparse.Namespace) -> str:
    """The BENCHMARKS.md section."""
    lines = [f"### Pretraining quality ({args.lang}, {results['model_type']}, {results['minutes']:.1f} min on "
             f"{platform.machine()}, {results['steps']} steps)", "",
             f"Held-out masked-LM accuracy: **{results['heldout_mlm_accuracy']:.3f}** "
             f"({results['parameters']:,} encoder parameters).", "",
             "Phases: " + "; ".join(f"sequence {p['max_seq_length']}, {p['steps']} steps in {p['minutes']:.1f} min, "
                                    f"held-out {p['heldout_mlm_accuracy']:.3f}" for p in results["phases"]) + ".", ""]
    calibration = results.get("calibration") or {}
    if calibration:
        lines += [f"Step times measured first over {calibration['steps']} steps: "
                  + ", ".join(f"{s * 1e3:.0f} ms" for s in calibration["seconds_per_step"])
                  + f" ({calibration['minutes']:.1f} min, counted in the budget).", ""]
    if results["downstream"]:
        lines += ["| task | metric | pretrained (mean of seeds) | random init | difference |", "|---|---|---|---|---|"]
    for name, task in results["downstream"].items():
        if "error" in task:
            lines.append(f"| {name} | {task['metric']} | {task['error']} | | |")
            continue
        p, r = statistics.mean(task["pretrained"]), statistics.mean(task["random"])
        lines.append(f"| {name} | {task['metric']} | {p:.4f} ({', '.join(f'{s:.4f}' for s in task['pretrained'])}) "
                     f"| {r:.4f} ({', '.join(f'{s:.4f}' for s in task['random'])}) | {p - r:+.4f} |")
    command = " ".join(["python -m benchmarks.studies.pretrain_quality", *sys.argv[1:]])
    wall = f"{results['wall_minutes']:.1f} min" + (" for the stages this call ran" if args.resume else " in all")
    return "\n".join(lines + ["", f"Command: `{command}` ({wall})", ""])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lang", choices=sorted(LANGUAGES), default="en")
    parser.add_argument("--minutes", type=float, default=60.0, help="pretraining wall-time budget")
    parser.add_argument("--out", required=True, help="output directory")
    parser.add_argument("--heldout-text", help="held-out text instead of the 5%% split of the corpus")
    parser.add_argument("--downstream", nargs=2, metavar=("TRAIN", "VALIDATION"),
                        help="one labelled task instead of the language's defaults")
    parser.add_argument("--text-column", default="sentence")
    parser.add_argument("--label-column", default="label")
    parser.add_argument("--tag", action="store_true", help="--downstream is a tagging task (kbert finetune tag)")
    parser.add_argument("--corpus", nargs="+", help="pretraining text files or globs instead of the recipe's")
    parser.add_argument("--recipe", nargs="+",
                        help="pretraining configs, one a phase, each phase starting from the one before "
                             "(default: the language's recipe in recipes/)")
    parser.add_argument("--vocab-size", type=int, default=8000)
    parser.add_argument("--seconds-per-step", type=float, default=0.25,
                        help="with --calibration-steps 0: sizes the step budget (and so the learning-rate decay) "
                             "of a recipe without max_minutes")
    parser.add_argument("--calibration-steps", type=int, default=50,
                        help="time each phase's step over this many steps first and give each phase the steps "
                             "that fill its time on this machine; 0: the recipes' own step counts")
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--no-downstream", action="store_true",
                        help="pretrain and score the held-out text only (stage 5 is skipped)")
    parser.add_argument("--finetune-epochs", type=int, default=FINETUNE_EPOCHS,
                        help="epochs of every fine-tuning run, except a default task that sets its own (MSRA NER: 10)")
    parser.add_argument("--finetune-learning-rate", type=float, default=FINETUNE_LEARNING_RATE)
    parser.add_argument("--max-train-examples", type=int, default=20000, help="0: all")
    parser.add_argument("--resume", action="store_true",
                        help="keep a finished pretraining run and finished fine-tuning runs found in --out")
    args = parser.parse_args(argv)
    if args.minutes <= 0:
        parser.error(f"--minutes must be positive, got {args.minutes:g}")
    if args.calibration_steps < 0:
        parser.error(f"--calibration-steps must be 0 or more, got {args.calibration_steps}")
    if args.heldout_text:
        heldout_files = glob.glob(args.heldout_text)
        if not heldout_files:
            parser.error(f"--heldout-text: no file matches {args.heldout_text}")
        if not any(pathlib.Path(f).read_bytes().strip() for f in heldout_files):
            parser.error(f"--heldout-text: {args.heldout_text} holds no text")
    try:
        if not args.no_downstream:
            check_downstream(downstream_tasks(args), args.max_train_examples)
    except ValueError as error:
        parser.error(str(error))
    work = pathlib.Path(args.out)
    work.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    train_files, heldout = prepare_text(args, work)
    summary = pretrain_stage(args, work, train_files, heldout)
    downstream, commands = ({}, []) if args.no_downstream else finetune_runs(args, work)
    curve = [json.loads(p.read_text()) for p in sorted((work / "model" / "heldout").glob("step_*.json"))]
    results = {"heldout_mlm_accuracy": summary["heldout"].get("mlm_accuracy"), "steps": summary["steps"],
               "minutes": summary["minutes"], "lang": args.lang, "model_type": summary["config"]["model_type"],
               "parameters": encoder_parameters(work / "model"), "downstream": downstream,
               "heldout": summary["heldout"], "heldout_curve": curve, "phases": summary["phases"], "calibration": summary["calibration"],
               "wall_minutes": (time.perf_counter() - start) / 60, "resumed": args.resume,
               "finetune_commands": commands}
    (work / "results.json").write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    section = markdown(results, args)
    (work / "BENCHMARKS_section.md").write_text(section, encoding="utf-8")
    print(section)
    return 1 if any("error" in task for task in downstream.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
