"""Runs tests/training/_worker.py modes in subprocesses with bounded timeouts, always killing them."""

from __future__ import annotations

import json
import os
import pathlib
import socket
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]


def worker_command(*args: object) -> list[str]:
    return [sys.executable, "-m", "tests.training._worker", *map(str, args)]


def worker_env() -> dict[str, str]:
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="", TF_CPP_MIN_LOG_LEVEL="2")
    env.pop("TF_CONFIG", None)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")])
    return env


def start(*args: object, log: pathlib.Path) -> subprocess.Popen:
    return subprocess.Popen(worker_command(*args), cwd=ROOT, env=worker_env(),
                            stdout=log.open("w"), stderr=subprocess.STDOUT)


def result(log: pathlib.Path) -> dict:
    """The RESULT line of a finished worker, or an AssertionError with the log's tail."""
    text = log.read_text(errors="replace")
    for line in text.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[len("RESULT "):])
    raise AssertionError(f"worker printed no RESULT; log tail:\n{text[-3000:]}")


def run_all(processes: list[subprocess.Popen], timeout: float) -> None:
    """Waits for every process; on timeout or error kills them all (never leaves children)."""
    try:
        for process in processes:
            process.wait(timeout=timeout)
    finally:
        for process in processes:
            if process.poll() is None:
                process.kill()
                process.wait()


def free_ports(n: int) -> list[int]:
    sockets = [socket.socket() for _ in range(n)]
    try:
        for s in sockets:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def run_cli_on_logical_cpus(argv: list[object], devices: int = 2, timeout: float = 600) -> subprocess.CompletedProcess:
    """Runs `kbert ARGV` in a fresh process whose CPU is split into `devices` logical devices (replicas)."""
    script = (
        "import sys\n"
        "import tensorflow as tf\n"
        "cpu = tf.config.list_physical_devices('CPU')[0]\n"
        f"tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * {devices})\n"
        "from kbert.cli.main import main\n"
        "raise SystemExit(main(sys.argv[1:]))\n"
    )
    return subprocess.run([sys.executable, "-c", script, *map(str, argv)], cwd=ROOT, env=worker_env(),
                          capture_output=True, text=True, timeout=timeout)
