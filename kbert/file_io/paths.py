"""Path names at any TensorFlow path, local or `scheme://`: joining, splitting and comparing, no I/O.

These helpers only read the string, so they work the same on a local path, `gs://`, `hdfs://` and
`ram://`, and need no TensorFlow. Use them as `kbert.file_io.join`, `kbert.file_io.dirname`, ...

Example:
    >>> from kbert.file_io import dirname, join
    >>> join("gs://bucket/run", "ckpt")
    'gs://bucket/run/ckpt'
    >>> dirname("gs://bucket")
    'gs://'
"""

from __future__ import annotations

import os
import posixpath
import uuid

PathLike = str | os.PathLike


def fspath(path: PathLike) -> str:
    """The path as a string (`pathlib.Path` and `str` alike)."""
    return os.fspath(path)


def is_local(path: PathLike) -> bool:
    """True for a path the operating system opens as it is: no `scheme://`.

    kbert takes local shortcuts only on such a path (an atomic rename, `os.path`, a library that opens the
    file itself); any URL, `file://` included, goes through `tf.io.gfile`, which reads them all.
    """
    return "://" not in fspath(path)


def join(*parts: PathLike) -> str:
    """Joins path parts with "/" (URLs keep their `scheme://`)."""
    parts = [fspath(p) for p in parts]
    return os.path.join(*parts) if is_local(parts[0]) else posixpath.join(*parts)


def basename(path: PathLike) -> str:
    """The last part of a path, ignoring a trailing "/"."""
    return posixpath.basename(fspath(path).rstrip("/"))


def dirname(path: PathLike) -> str:
    """The parent of a path, ignoring a trailing "/" ("." for a bare local file name)."""
    path = fspath(path).rstrip("/")
    scheme, sep, rest = path.rpartition("://")
    if sep and "/" not in rest:
        return scheme + sep  # "gs://bucket" -> "gs://"
    return posixpath.dirname(path) or "."


def same_file(a: PathLike, b: PathLike) -> bool:
    """Whether two paths name the same file (local paths are resolved, URLs compared as text)."""
    a, b = fspath(a), fspath(b)
    if is_local(a) and is_local(b):
        return os.path.realpath(a) == os.path.realpath(b)
    return a.rstrip("/") == b.rstrip("/")


def temp_sibling(path: PathLike, tag: str = "tmp") -> str:
    """A fresh hidden name beside `path` (`DIR/.NAME.tmp-HEX`), on the same file system, for write-then-rename."""
    path = fspath(path).rstrip("/")
    return join(dirname(path), f".{basename(path)}.{tag}-{uuid.uuid4().hex[:12]}")
