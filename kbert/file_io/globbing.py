"""`glob` at any TensorFlow path, with `**` for any number of directories (as `glob.glob(recursive=True)`).

`tf.io.gfile.glob` has no `**`: a pattern with one is matched here against every path under the part of
the pattern before the first wildcard, walked with `tf.io.gfile.walk`. Use it as `kbert.file_io.glob`.

Example:
    >>> import kbert.file_io as file_io
    >>> file_io.write_text("ram://kbert-glob/a/b/c.txt", "x")
    >>> glob("ram://kbert-glob/**/*.txt")
    ['ram://kbert-glob/a/b/c.txt']
"""

from __future__ import annotations

import os
import re

from kbert.file_io.paths import PathLike, dirname, fspath, join


def _glob_regex(pattern: str) -> re.Pattern:
    """`**/` is zero or more directories, `**` anything, `*` and `?` stop at "/", `[...]` as in fnmatch."""
    out, i = [], 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        elif pattern[i] == "[" and "]" in pattern[i + 1:]:
            end = pattern.index("]", i + 1)
            body = pattern[i + 1:end]
            out.append("[" + ("^" + body[1:] if body.startswith("!") else body) + "]")
            i = end + 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return re.compile("".join(out) + r"\Z")


def glob(pattern: PathLike) -> list[str]:
    """The sorted paths matching a glob; `**` matches any number of directories (as `recursive=True`).

    Args:
        pattern: str or path. `*`, `?` and `[...]` within a path part, `**` across parts.

    Returns:
        The matching paths, sorted; local matches of a relative pattern are relative too.
    """
    import tensorflow as tf  # here: importing kbert.file_io stays cheap (the CLI)

    pattern = fspath(pattern)
    if "**" not in pattern:
        return sorted(tf.io.gfile.glob(pattern))
    root = pattern[:pattern.index("**")]
    root = root[:root.rfind("/") + 1] if "/" in root else ""
    if re.search(r"[*?\[]", root):
        root = dirname(root[:re.search(r"[*?\[]", root).start()]) + "/"
    regex = _glob_regex(pattern)
    found = []
    for directory, subdirs, files in tf.io.gfile.walk(root or "."):
        for name in list(subdirs) + list(files):
            path = join(directory, name.rstrip("/"))
            if not root:
                path = os.path.relpath(path, ".")
            if regex.match(path) and tf.io.gfile.exists(path):  # not a ram:// phantom (see file_io.rmtree)
                found.append(path)
    return sorted(set(found))
