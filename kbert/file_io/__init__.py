"""Files at any TensorFlow path: local, `gs://`, `hdfs://`, `ram://`, all through `tf.io.gfile`.

Every file kbert reads or writes goes through these helpers (or an API built on `tf.io.gfile`, such as
`tf.data.TFRecordDataset`, `tf.saved_model` or `tf.summary`), so a path a user gives may be a cloud
URL. Errors name the path as it was given: a missing `ram://bucket/x` raises `FileNotFoundError` naming
`ram://bucket/x`, not TensorFlow's `NotFoundError`.

`kbert.file_io` is the one surface; inside, `paths` names paths without I/O (`join`, `dirname`,
`is_local`, ...), `globbing` is `glob` with `**`, `files` reads, writes and moves, and `model_source` turns a
model name (a path, or a Hugging Face Hub name such as `hf://ORG/NAME`) into the directory to read.

Object stores have no real directories: `write_bytes` and `write_text` create the parent first (on
`ram://` only created directories are listed), and `move_dir` renames file by file where a directory
rename is not one atomic step (everywhere but the local disk).

Example:
    >>> import kbert.file_io as file_io
    >>> file_io.write_text("ram://kbert-doc/a/b.txt", "hello\\n")
    >>> file_io.read_text("ram://kbert-doc/a/b.txt")
    'hello\\n'
    >>> file_io.glob("ram://kbert-doc/**/*.txt")
    ['ram://kbert-doc/a/b.txt']
"""

from kbert.file_io.files import (copy, exists, isdir, isfile, iter_lines, listdir, load_keras_model, makedirs,
                                 move_dir, open_file, read_bytes, read_json, read_text, remove, rename, rmtree,
                                 size, staged_directory, text_stream, walk, write_bytes, write_json,
                                 write_text)
from kbert.file_io.globbing import glob
from kbert.file_io.model_source import ModelNotFoundError, ModelSource, resolve_model, resolve_source
from kbert.file_io.paths import PathLike, basename, dirname, fspath, is_local, join, same_file, temp_sibling

__all__ = [
    "ModelNotFoundError", "ModelSource", "PathLike", "basename", "copy", "dirname", "exists", "fspath", "glob",
    "is_local", "isdir", "isfile", "iter_lines", "join", "listdir", "load_keras_model", "makedirs", "move_dir",
    "open_file", "read_bytes", "read_json", "read_text", "remove", "rename", "resolve_model", "resolve_source",
    "rmtree", "same_file", "size", "staged_directory", "temp_sibling", "text_stream", "walk", "write_bytes",
    "write_json", "write_text"
]
