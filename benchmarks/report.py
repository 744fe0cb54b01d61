"""Writes one benchmark's section of BENCHMARKS.md, leaving the other sections as they are."""

from __future__ import annotations

import pathlib
import platform
import re
import sys

BENCHMARKS_MD = pathlib.Path(__file__).resolve().parents[1] / "BENCHMARKS.md"
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
    script = pathlib.Path(sys.argv[0])
    if script.suffix == ".py" and script.parent.name == "benchmarks":
        return " ".join(["python -m", f"benchmarks.{script.stem}", *sys.argv[1:]])
    return "python " + " ".join(sys.argv)


def cpu_name() -> str:
    """The processor's model name (from /proc/cpuinfo where there is one)."""
    try:
        for line in open("/proc/cpuinfo", encoding="utf-8"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def publish(name: str, report: str, write: bool = True) -> None:
    """Prints a benchmark's report and, unless `write` is False, stores it as section `name`."""
    print(report)
    if write:
        write_section(name, report)
