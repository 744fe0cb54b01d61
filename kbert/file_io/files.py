"""Reading, writing, listing and moving files at any TensorFlow path, through `tf.io.gfile`.

`kbert.file_io` is this module's public surface; see its docstring.
"""

from __future__ import annotations

import contextlib
import io
import json
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from kbert.file_io.paths import PathLike, dirname, fspath, is_local, join, temp_sibling

if TYPE_CHECKING:
    import tensorflow as tf


class _LazyTF:
    """`tf.io.gfile` and `tf.errors`, imported at first use: importing this module stays cheap (the CLI)."""

    @property
    def gfile(self):
        import tensorflow as tf

        return tf.io.gfile

    @property
    def NotFoundError(self):
        import tensorflow as tf

        return tf.errors.NotFoundError


_tf = _LazyTF()


def walk(top: PathLike) -> Iterator[tuple[str, list[str], list[str]]]:
    """`(directory, subdirectory names, file names)` for `top` and every directory below it."""
    return _tf.gfile.walk(fspath(top))


def exists(path: PathLike) -> bool:
    return _tf.gfile.exists(fspath(path))


def isdir(path: PathLike) -> bool:
    return _tf.gfile.isdir(fspath(path))


def isfile(path: PathLike) -> bool:
    return _tf.gfile.exists(fspath(path)) and not _tf.gfile.isdir(fspath(path))


def makedirs(path: PathLike) -> None:
    """Creates a directory and its parents; an existing one is fine."""
    _tf.gfile.makedirs(fspath(path))


def size(path: PathLike) -> int:
    """The file's size in bytes."""
    try:
        return _tf.gfile.stat(fspath(path)).length
    except _tf.NotFoundError:
        raise FileNotFoundError(f"file not found: {fspath(path)}") from None


def listdir(path: PathLike) -> list[str]:
    """The sorted names (not paths) in a directory."""
    try:
        return sorted(name.rstrip("/") for name in _tf.gfile.listdir(fspath(path)))
    except _tf.NotFoundError:
        raise FileNotFoundError(f"directory not found: {fspath(path)}") from None


def _make_parent(path: str) -> None:
    """Creates the directory `path` goes in, if missing (never a bare scheme such as "gs://")."""
    parent = dirname(path)
    if not parent.endswith("://") and not _tf.gfile.exists(parent):
        _tf.gfile.makedirs(parent)


def open_file(path: PathLike, mode: str = "r") -> "tf.io.gfile.GFile":
    """A `tf.io.gfile.GFile`; reading a missing file raises `FileNotFoundError` naming it."""
    path = fspath(path)
    if "r" in mode and not _tf.gfile.exists(path):
        raise FileNotFoundError(f"file not found: {path}")
    if any(m in mode for m in "wa"):
        _make_parent(path)
    return _tf.gfile.GFile(path, mode)


def iter_lines(path: PathLike, chunk_size: int = 1 << 20) -> Iterator[bytes]:
    """The lines of a file as bytes, each with its "\n" (the last may lack one), read in 1 MiB chunks.

    Iterating a `GFile` reads a line per call into TensorFlow, about 15 times slower than this.
    """
    with open_file(path, "rb") as f:
        tail = b""
        while True:
            chunk = f.read(chunk_size)
            if not chunk:
                break
            lines = (tail + chunk).split(b"\n")
            tail = lines.pop()
            for line in lines:
                yield line + b"\n"
        if tail:
            yield tail


def read_bytes(path: PathLike) -> bytes:
    with open_file(path, "rb") as f:
        return f.read()


class TextEncodingError(ValueError):
    """A file that is not valid text in its encoding; the message names the file, line, column and byte."""


def read_text(path: PathLike, encoding: str = "utf-8", errors: str = "strict") -> str:
    """The file decoded (`encoding="utf-8-sig"` drops a BOM). Line endings are left as they are.

    Raises:
        TextEncodingError: with `errors="strict"`, a byte that does not decode, named by file, line and column.
    """
    data = read_bytes(path)
    try:
        return data.decode(encoding, errors)
    except UnicodeDecodeError as error:
        line = data.count(b"\n", 0, error.start) + 1
        column = error.start - (data.rfind(b"\n", 0, error.start) + 1) + 1
        raise TextEncodingError(
            f"{fspath(path)}:{line}:{column}: not valid {encoding.removesuffix('-sig').upper()}: byte "
            f"0x{data[error.start]:02x} ({error.reason}); save the file as UTF-8 (e.g. `iconv -f latin1 -t utf-8`) "
            "or remove the byte") from None


def text_stream(path: PathLike, encoding: str = "utf-8", newline: str | None = None) -> io.StringIO:
    """The file as a text stream for `csv` and line readers (`newline` as in `open`: None translates
    "\\r\\n" to "\\n", "" keeps endings for `csv`). The whole file is read into memory."""
    return io.StringIO(read_text(path, encoding), newline=newline)


def read_json(path: PathLike) -> Any:
    """A JSON file; invalid JSON raises ValueError naming the file."""
    try:
        return json.loads(read_text(path))
    except json.JSONDecodeError as err:
        raise ValueError(f"{fspath(path)}: invalid JSON ({err})") from err


def write_bytes(path: PathLike, data: bytes) -> None:
    """Writes a file, creating its directory."""
    with open_file(path, "wb") as f:
        f.write(data)


def write_text(path: PathLike, text: str, encoding: str = "utf-8") -> None:
    write_bytes(path, text.encode(encoding))


def write_json(path: PathLike, value: Any, indent: int | None = 2, **kwargs: Any) -> None:
    """Writes `json.dumps(value)` and a final newline."""
    write_text(path, json.dumps(value, indent=indent, **kwargs) + "\n")


def remove(path: PathLike, missing_ok: bool = True) -> None:
    """Deletes a file."""
    try:
        _tf.gfile.remove(fspath(path))
    except _tf.NotFoundError:
        if not missing_ok:
            raise FileNotFoundError(f"file not found: {fspath(path)}") from None


def rmtree(path: PathLike) -> None:
    """Deletes a directory and everything in it; a missing one is fine."""
    path = fspath(path)
    if _tf.gfile.exists(path):
        try:
            _tf.gfile.rmtree(path)
        except _tf.NotFoundError:
            # ram:// lists "a.b/c" inside "a" as ".b/c" too, fails to delete that, and has deleted the rest.
            if _tf.gfile.exists(path):
                raise


def copy(src: PathLike, dst: PathLike, overwrite: bool = True) -> None:
    """Copies a file, across file systems too."""
    src, dst = fspath(src), fspath(dst)
    if not _tf.gfile.exists(src):
        raise FileNotFoundError(f"file not found: {src}")
    _make_parent(dst)
    _tf.gfile.copy(src, dst, overwrite=overwrite)


def rename(src: PathLike, dst: PathLike, overwrite: bool = False) -> None:
    """Renames a file (for a directory use `move_dir`)."""
    src, dst = fspath(src), fspath(dst)
    if not _tf.gfile.exists(src):
        raise FileNotFoundError(f"file not found: {src}")
    _tf.gfile.rename(src, dst, overwrite=overwrite)


def move_dir(src: PathLike, dst: PathLike) -> None:
    """Renames directory `src` to `dst` (which must not exist).

    Locally this is one atomic `rename`. Object stores (gs://, ram://, ...) have no directory rename:
    each file is renamed in turn and `src` removed, so a reader may see a partial `dst` meanwhile; write
    to a `temp_sibling` first so that `dst` at least never holds a half-written file.
    """
    src, dst = fspath(src).rstrip("/"), fspath(dst).rstrip("/")
    if is_local(src) and is_local(dst):
        _tf.gfile.rename(src, dst)
        return
    _tf.gfile.makedirs(dst)
    for directory, subdirs, files in list(_tf.gfile.walk(src)):
        target = dst + directory[len(src):]
        for name in subdirs:
            _tf.gfile.makedirs(join(target, name.rstrip("/")))
        for name in files:
            if _tf.gfile.exists(join(directory, name)):  # not one of ram://'s phantom ".extra" entries (see rmtree)
                _tf.gfile.rename(join(directory, name), join(target, name), overwrite=True)
    rmtree(src)


@contextlib.contextmanager
def staged_directory(out: PathLike) -> Iterator[str]:
    """A fresh hidden directory beside `out` to write into, which then replaces `out` (see `move_dir`).

    On an exception inside the block the staged directory is removed and `out` is left as it was. The name
    (`temp_sibling`) is hidden and not a number, so a TF Serving poller of `out`'s parent never loads it.

    Example:
        >>> with staged_directory("ram://kbert-staged/1") as tmp:
        ...     write_text(join(tmp, "a.txt"), "x")
        >>> listdir("ram://kbert-staged/1")
        ['a.txt']
    """
    out = fspath(out).rstrip("/")
    _tf.gfile.makedirs(dirname(out))
    tmp = temp_sibling(out)
    _tf.gfile.makedirs(tmp)
    try:
        yield tmp
        if _tf.gfile.exists(out):
            rmtree(out)
        move_dir(tmp, out)
    except BaseException:
        rmtree(tmp)
        raise


def load_keras_model(path: PathLike, compile: bool = True):
    """`keras.saving.load_model` of a `.keras` file at any path, without a local copy.

    Keras 3 copies a remote `.keras` file into a local temporary directory before reading it; here the
    file is read into memory and handed to Keras' own zip reader instead (its `saving_lib.load_model`
    takes a file object). A Keras without that reader gets the path, and makes its local copy.
    """
    import keras

    path = fspath(path)
    if is_local(path):
        return keras.saving.load_model(path, compile=compile)
    data = io.BytesIO(read_bytes(path))
    try:
        from keras.src.saving import saving_lib
    except ImportError:
        return keras.saving.load_model(path, compile=compile)
    return saving_lib.load_model(data, compile=compile)
