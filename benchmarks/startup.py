"""Start-up time of the command line: how long `kbert --help`, `kbert COMMAND --help`, an argument error,
`import kbert` and, given an export, `kbert predict` take, each in a fresh process.

    python -m benchmarks.startup                      # the help pages, an argument error, import kbert
    python -m benchmarks.startup --export EXPORT      # also `kbert predict` on EXPORT and EXPORT/model.tflite
    python -m benchmarks.startup --repeats 1 --only help   # a smoke run

Runs this checkout's kbert (`python -m kbert.cli.main` from the repository root). Prints a Markdown table:
the median and the fastest of `--repeats` wall times per command. The goal for `kbert --help`,
`kbert finetune classify --help` and `kbert pretrain --help` is 1.0 s or less (median of 3).
"""

from __future__ import annotations

import argparse
import os
import pathlib
import statistics
import subprocess
import sys
import time

REPO = pathlib.Path(__file__).resolve().parents[1]
GOAL_SECONDS = 1.0
HEADLINE = ("--help", "finetune classify --help", "pretrain --help")
HELPS = ("--help", "finetune classify --help", "finetune tag --help", "finetune qa --help", "pretrain --help",
         "create-pretraining-data --help", "export --help", "predict --help", "evaluate --help", "convert --help",
         "vocab --help", "demo --help")
ERROR = "finetune classify --train train.tsv"  # --out is missing: argparse's error, exit status 2


def cases(only: str | None, export: pathlib.Path | None) -> dict[str, list[str]]:
    """{label: command line} of what to time."""
    kbert = [sys.executable, "-m", "kbert.cli.main"]
    found = {f"kbert {args}": kbert + args.split() for args in HELPS}
    found[f"kbert {ERROR} (error)"] = kbert + ERROR.split()
    found["import kbert"] = [sys.executable, "-c", "import kbert"]
    found["import kbert; kbert.BertEncoder"] = [sys.executable, "-c", "import kbert; kbert.BertEncoder"]
    if export is not None:
        found["kbert predict SAVEDMODEL one text"] = kbert + ["predict", str(export), "A charming little film."]
        found["kbert predict model.tflite one text"] = kbert + ["predict", str(export / "model.tflite"),
                                                                "A charming little film."]
    return {label: argv for label, argv in found.items() if only is None or only in label}


def wall_times(argv: list[str], repeats: int) -> list[float]:
    """Seconds of each of `repeats` runs of `argv` in a fresh process (its output discarded)."""
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3")
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p)
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        proc = subprocess.run(argv, cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        times.append(time.perf_counter() - start)
        if proc.returncode not in (0, 2):
            raise SystemExit(f"{' '.join(argv)} failed ({proc.returncode}):\n{proc.stderr.decode()[-2000:]}")
    return times


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3, help="runs per command (default 3)")
    parser.add_argument("--export", type=pathlib.Path, default=None,
                        help="a `kbert export --tflite` directory: also time `kbert predict` on both of its models")
    parser.add_argument("--only", default=None, help="time only the commands whose label contains this text")
    args = parser.parse_args(argv)
    print(f"Python {sys.version.split()[0]}, {os.cpu_count()} CPUs, load average "
          f"{os.getloadavg()[0]:.1f}, {args.repeats} run(s) each\n")
    print("| command | median s | fastest s | goal |")
    print("|---|---:|---:|---|")
    for label, command in cases(args.only, args.export).items():
        times = wall_times(command, args.repeats)
        goal = ""
        if label.removeprefix("kbert ") in HEADLINE:
            goal = f"<= {GOAL_SECONDS:.1f} s: {'met' if statistics.median(times) <= GOAL_SECONDS else 'not met'}"
        print(f"| `{label}` | {statistics.median(times):.2f} | {min(times):.2f} | {goal} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
