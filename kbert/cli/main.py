"""`kbert`: the command-line entry point.

Each subcommand lives in its own module under `kbert/cli/`, with `add_arguments(parser)` and
`run(args) -> int`. Modules are imported only when their command runs, so `kbert --help` stays fast.
Errors are printed here, the same way for every command: a user's mistake (a `UsageError`, or a
ValueError / OSError from the library: a bad row, a missing file, an unknown label) prints
`kbert COMMAND: error: MESSAGE` on stderr and exits non-zero, without a traceback (set
`KBERT_TRACEBACK=1` to see one). The console script keeps TensorFlow's native log lines (`I0000 ...`,
`E0000 ... failed call to cuInit`) off stderr (`kbert.cli.native_logs`; set `KBERT_TF_LOGS=1` to see them).

A checkpoint or model argument may be a directory at any path or a model name: `hf://ORG/NAME[@REVISION]`,
or `ORG/NAME` when no such local path exists (the Hugging Face Hub, `kbert.file_io.model_source`).
"""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import sys

from kbert.cli.native_logs import filter_native_logs


class UsageError(Exception):
    """A command line that cannot run (e.g. a missing flag that depends on another); exit status 2."""


# name -> (module, one-line help)
COMMANDS: dict[str, tuple[str, str]] = {
    "demo": ("kbert.cli.demo", "Fine-tune, evaluate and export a classifier on built-in data, offline."),
    "vocab": ("kbert.cli.vocab", "Learn a WordPiece (BERT), SentencePiece (ALBERT) or byte-level BPE (RoBERTa) "
                                 "vocabulary from text files."),
    "create-pretraining-data": (
        "kbert.cli.create_pretraining_data",
        "Turn a text corpus into masked-LM + NSP/SOP TFRecords.",
    ),
    "pretrain": ("kbert.cli.pretrain", "Pretrain BERT with masked LM and NSP/SOP."),
    "finetune": ("kbert.cli.finetune", "Fine-tune on a downstream task: one subcommand per task."),
    "distill": ("kbert.cli.distill", "Distil a fine-tuned model directory into a smaller student: one subcommand "
                                     "per task."),
    "evaluate": ("kbert.cli.evaluate", "Evaluate a fine-tuned model directory on a dataset."),
    "export": ("kbert.cli.export", "Export a strings-in SavedModel (and TFLite)."),
    "predict": ("kbert.cli.predict", "Run an exported SavedModel or .tflite on texts."),
    "embed": ("kbert.cli.embed", "Embed every row of a corpus with an export, into Parquet shards (or with Beam)."),
    "index": ("kbert.cli.index", "Build a semantic-search SavedModel from embeddings and their export."),
    "convert": ("kbert.cli.convert", "Convert a checkpoint (HF, Google TF1, kbert) to kbert or HF layout."),
    "download": ("kbert.cli.download", "Write a model's files (a Hugging Face Hub name) as a directory to carry "
                                       "offline."),
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="kbert", description=__doc__.splitlines()[0])
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (module_name, help_text) in COMMANDS.items():
        sub = subparsers.add_parser(name, help=help_text, description=help_text)
        sub.set_defaults(_module=module_name)
        # Arguments are added lazily in main(), once the command is known.
    return parser


def main(argv: list[str] | None = None, own_process: bool = False) -> int:
    """Runs one `kbert` command; returns its exit status.

    Args:
        argv: the arguments after `kbert`; default: the process's.
        own_process: the command is the whole process (the console script), so it may set what holds for a
            whole process (`kbert predict`'s serving threads); a caller's process is left as it is.
    """
    argv = sys.argv[1:] if argv is None else argv
    parser = build_parser()
    if not argv or argv[0] not in COMMANDS:
        args = parser.parse_args(argv)  # prints help or the error for an unknown command
        parser.print_help()
        return 2
    module_name, help_text = COMMANDS[argv[0]]
    # TensorFlow turns its oneDNN kernels on by itself only on CPUs with AVX512-VNNI/BF16 or AMX; on older
    # x86 CPUs (AVX2 AMD) they run BERT 1.75x faster. Set here, before a command imports TensorFlow.
    os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "1")
    module = importlib.import_module(module_name)
    sub = argparse.ArgumentParser(prog=f"kbert {argv[0]}", description=help_text)
    module.add_arguments(sub)
    if getattr(module, "PASS_UNKNOWN_ARGS", False):  # the module checks `args.unknown_args` itself
        args, args.unknown_args = sub.parse_known_args(argv[1:])
    else:
        args = sub.parse_args(argv[1:])
    args.own_process = own_process
    try:
        return int(module.run(args) or 0)
    except (UsageError, ValueError, OSError) as error:
        if os.environ.get("KBERT_TRACEBACK"):
            raise
        print(f"kbert {argv[0]}: error: {error}", file=sys.stderr)
        return 2 if isinstance(error, UsageError) else 1


def entry_point() -> None:
    """The `kbert` console script (and `python -m kbert.cli.main`): `main`, then an immediate exit.

    Once a command has loaded TensorFlow, the interpreter's own shutdown (tearing down TensorFlow's objects
    and thread pools) takes seconds: 6 s of a `kbert finetune` process here. By the time `main` returns,
    every file the command wrote is closed and its scratch folders are removed, so the console script
    flushes its streams and logging and leaves without that teardown. A command that raises exits the
    usual way. `main` itself returns normally, for callers in the same process.
    """
    stop_filter = None if os.environ.get("KBERT_TF_LOGS") else filter_native_logs()
    try:
        code = main(own_process=True)
    finally:
        sys.stdout.flush()
        if stop_filter is not None:
            stop_filter()
    logging.shutdown()
    os._exit(code)


if __name__ == "__main__":
    entry_point()
