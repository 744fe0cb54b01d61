"""No raw local-file I/O in `kbert/`: every path may be a URL, so files go through `kbert.file_io` (tf.io.gfile).

The scan reads the code (not docstrings, whose examples may use `tempfile` and `pathlib`) and flags the
builtin `open`, the `pathlib`, `glob`, `shutil` and `tempfile` modules, `pathlib.Path` methods
(`.read_text()`, `.mkdir()`, ...), `os.path.isfile/isdir/exists` and `os.makedirs/listdir/remove/rename/...`. String helpers (`os.path.join`, `splitext`, `basename`) are fine:
they work on URLs too.
"""

from __future__ import annotations

import ast
import pathlib

KBERT = pathlib.Path(__file__).resolve().parents[1] / "kbert"

# "file.py:function" (or "file.py:<module>") -> why that place needs a real local file.
ALLOW = {
    "kbert/pretrained.py:minilm_path": "the weights inside an installed Python package, always on the local disk",
    "kbert/export/tflite_convert.py:convert": "called without a workdir, the converter's intermediate SavedModel "
                                              "goes to a local temp dir (export() passes one on OUT's file system)",
    "kbert/export/mediapipe_convert.py:convert": "as tflite_convert.convert: without a workdir, the converter's "
                                                 "intermediate SavedModel goes to a local temp dir",
    "kbert/export/tflite.py:interpreter": "LiteRT reads a local .tflite itself; checking it with os.path keeps "
                                          "`kbert predict model.tflite` free of TensorFlow",
    "kbert/export/export_config.py:read_export_config": "the config beside a local .tflite, read without loading "
                                                        "TensorFlow (as LiteRT reads the file itself)",
    "kbert/text/sentencepiece_vocabulary.py:compile_charsmap": "the rules file the sentencepiece library reads "
                                                               "itself, in a private local temp dir, removed at once",
    "kbert/precision.py:cpu_flags": "/proc/cpuinfo, this machine's own file (and the module must not load TensorFlow)",
    "kbert/convert/keras_hub_presets.py:cache_directory": "keras-hub reads a preset directory itself, on the local "
                                                          "disk only; the key of its conversion is the weights "
                                                          "file's size and modification time",
    "kbert/training/worker_outputs.py:_scratch": "a non-chief worker's scratch outputs are local and private by "
                                                 "design, removed at the end",
}

MODULES = {"pathlib", "glob", "shutil", "tempfile"}
OS_CALLS = {"makedirs", "mkdir", "listdir", "remove", "unlink", "rename", "replace", "rmdir", "removedirs",
            "scandir", "walk", "stat"}
OS_PATH_CALLS = {"isfile", "isdir", "exists", "getsize", "getmtime", "lexists"}
# `pathlib.Path` methods, on a path object from anywhere (a caller may pass one in).
PATH_METHODS = {"read_text", "write_text", "read_bytes", "write_bytes", "is_file", "is_dir", "mkdir", "unlink",
                "iterdir", "glob", "rglob", "touch", "rmdir", "exists"}
GFILE_OWNERS = {"file_io", "gfile"}  # kbert.file_io and tf.io.gfile: the ways that take URLs


class _Scanner(ast.NodeVisitor):
    def __init__(self, shadowed_open: bool) -> None:
        self.shadowed_open = shadowed_open
        self.scope = ["<module>"]
        self.found: list[tuple[int, str, str]] = []

    def _flag(self, node: ast.AST, what: str) -> None:
        self.found.append((node.lineno, self.scope[-1], what))

    def visit_FunctionDef(self, node) -> None:
        self.scope.append(node.name)
        self.generic_visit(node)
        self.scope.pop()

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if (node.module or "").split(".")[0] in MODULES:
            self._flag(node, f"from {node.module} import ...")

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        if isinstance(func, ast.Name) and func.id == "open" and not self.shadowed_open:
            self._flag(node, "open()")
        if isinstance(func, ast.Attribute):
            owner = func.value
            if isinstance(owner, ast.Name) and owner.id == "os" and func.attr in OS_CALLS:
                self._flag(node, f"os.{func.attr}()")
            os_path = (isinstance(owner, ast.Attribute) and owner.attr == "path" and isinstance(owner.value, ast.Name)
                       and owner.value.id == "os")
            if os_path and func.attr in OS_PATH_CALLS:
                self._flag(node, f"os.path.{func.attr}()")
            if isinstance(owner, ast.Name) and owner.id == "io" and func.attr == "open":
                self._flag(node, "io.open()")
            if isinstance(owner, ast.Name) and owner.id in MODULES:
                self._flag(node, f"{owner.id}.{func.attr}()")
            owner_name = owner.id if isinstance(owner, ast.Name) else getattr(owner, "attr", None)
            if func.attr in PATH_METHODS and owner_name not in GFILE_OWNERS | MODULES and not os_path:
                self._flag(node, f".{func.attr}()")
        self.generic_visit(node)


def raw_file_io(source: str) -> list[tuple[int, str, str]]:
    """(line, enclosing function, what) for each raw local-file operation in `source`."""
    tree = ast.parse(source)
    shadowed = any(isinstance(node, (ast.FunctionDef, ast.ImportFrom, ast.Import)) and
                   ("open" in [a.asname or a.name for a in getattr(node, "names", [])] or
                    getattr(node, "name", None) == "open") for node in ast.walk(tree))
    scanner = _Scanner(shadowed)
    scanner.visit(tree)
    return scanner.found


def test_the_scanner_finds_each_kind():
    source = (
        "import glob, os\nfrom pathlib import Path\n"
        "def f(p):\n"
        "    '''>>> open('/tmp/x', 'w')'''\n"
        "    open(p)\n    os.path.isfile(p)\n    os.makedirs(p)\n    os.path.join(p, 'x')\n"
        "    path.write_text('x')\n    file_io.write_text(p, 'x')\n    tf.io.gfile.glob(p)\n    glob.glob(p)\n"
    )
    found = raw_file_io(source)
    assert [(line, what) for line, _, what in found] == [
        (2, "from pathlib import ..."), (5, "open()"), (6, "os.path.isfile()"), (7, "os.makedirs()"),
        (9, ".write_text()"), (12, "glob.glob()")]
    assert {scope for _, scope, _ in found} == {"<module>", "f"}


def test_no_raw_file_io_in_kbert():
    problems, used = [], set()
    for path in sorted(KBERT.rglob("*.py")):
        relative = path.relative_to(KBERT.parent).as_posix()
        for line, scope, what in raw_file_io(path.read_text(encoding="utf-8")):
            key = f"{relative}:{scope}"
            if key in ALLOW:
                used.add(key)
            else:
                problems.append(f"{relative}:{line}: {what} in {scope} (use kbert.file_io, or allow-list it here)")
    assert not problems, "raw file I/O in kbert/:\n" + "\n".join(problems)
    assert used == set(ALLOW), f"stale allow-list entries: {sorted(set(ALLOW) - used)}"
