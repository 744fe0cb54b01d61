"""Writes one benchmark's section of BENCHMARKS.md, leaving the other sections as they are; runs variants apart."""

from __future__ import annotations

import argparse
import json
import os
import pathlib
import platform
import re
import shlex
import subprocess
import sys
from collections.abc import Sequence
from typing import Any

BENCHMARKS_MD = pathlib.Path(__file__).resolve().parents[2] / "BENCHMARKS.md"
HEADER = "# kbert benchmarks\n\nEach section is written by the script it names; rerun the command to refresh it.\n"


def write_section(name: str, body: str, path: pathlib.Path = BENCHMARKS_MD) -> None:
    """Replaces (or appends) the section between `<!-- name -->` markers with `body`."""
    text = path.read_text(encoding="utf-8") if path.exists() else HEADER
    start, end = f"<!-- {name} start -->", f"<!-- {name} end -->"
    block = f"{start}\n{body.rstrip()}\n{end}"
    pattern = re.compile(re.escape(start) + r".*?" + re.escape(end), re.S)
    text = pattern.sub(lambda _: block, text) if pattern.search(text) else text.rstrip() + "\n\n" + block + "\n"
    path.write_text(text, encoding="utf-8")


def command_line() -> str:
    """The command that ran this benchmark, as typed from the repository root."""
    script = pathlib.Path(sys.argv[0]).resolve()
    root = pathlib.Path(__file__).resolve().parents[2]
    if script.suffix == ".py" and script.is_relative_to(root / "benchmarks"):
        module = ".".join(script.relative_to(root).with_suffix("").parts)
        return " ".join(["python -m", module, *map(shlex.quote, sys.argv[1:])])
    return "python " + shlex.join(sys.argv)


def cpu_name() -> str:
    """The processor's model name (from /proc/cpuinfo where there is one)."""
    try:
        for line in open("/proc/cpuinfo", encoding="utf-8"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def host_key() -> str:
    """"VENDOR FAMILY/MODEL" of this processor (e.g. "GenuineIntel 6/167"): names a host's own section."""
    fields: dict[str, str] = {}
    try:
        for line in open("/proc/cpuinfo", encoding="utf-8"):  # a local kernel file, not a user path
            key, _, value = line.partition(":")
            fields.setdefault(key.strip(), value.strip())
    except OSError:
        return platform.machine()
    return f"{fields.get('vendor_id', '?')} {fields.get('cpu family', '?')}/{fields.get('model', '?')}"


def cpu_flags_that_matter() -> str:
    """The vector and matrix flags of this CPU that decide its float32 and bfloat16 speed, space-separated."""
    from kbert.precision import cpu_flags

    wanted = ("avx2", "avx512f", "avx512_vnni", "avx512_bf16", "amx_bf16", "amx_int8", "amx_tile")
    return " ".join(f for f in wanted if f in cpu_flags()) or "none of " + ", ".join(wanted)


def host_line() -> str:
    """This host as a record names it: processor, its family/model (`host_key`), cores and flags."""
    return (f"{cpu_name()} (family/model {host_key()}), {os.cpu_count()} cores, "
            f"flags: {cpu_flags_that_matter()}")


def load_average() -> str:
    """The 1-, 5- and 15-minute load averages, as `uptime` prints them."""
    return " / ".join(f"{value:.2f}" for value in os.getloadavg())


def publish(name: str, report: str, write: bool = True, path: pathlib.Path = BENCHMARKS_MD) -> None:
    """Prints a benchmark's report and, unless `write` is False, stores it as section `name` of `path`."""
    print(report)
    if write:
        write_section(name, report, path)


def add_variant_arguments(parser: argparse.ArgumentParser, variants: Sequence[str], steps: int,
                          ablations: Sequence[str] = ()) -> None:
    """The flags of a benchmark that times each variant in a process of its own (`run_in_own_process`).

    `variants` run by default; `ablations` only when `--variants` names them.
    """
    parser.add_argument("--variants", default=",".join(variants),
                        help=f"comma-separated, of {', '.join([*variants, *ablations])}")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--steps", type=int, default=steps, help="timed steps a round")
    parser.add_argument("--one", help=argparse.SUPPRESS)  # a child process: time this variant, print JSON


def chosen_variants(parser: argparse.ArgumentParser, args: argparse.Namespace, variants: Sequence[str]) -> list[str]:
    """`--variants` as a list, or the parser's error naming the unknown ones."""
    chosen = [v.strip() for v in args.variants.split(",") if v.strip()]
    unknown = [v for v in chosen if v not in variants]
    if unknown:
        parser.error(f"unknown variants {unknown}; choose from {', '.join(variants)}")
    return chosen


def run_in_own_process(module: str, variant: str, args: Sequence[str]) -> Any:
    """Runs `python -m module ARGS --one VARIANT` and returns the JSON it printed last."""
    child = subprocess.run([sys.executable, "-m", module, *args, "--one", variant],
                           capture_output=True, text=True, check=True)
    return json.loads(child.stdout.strip().splitlines()[-1])
