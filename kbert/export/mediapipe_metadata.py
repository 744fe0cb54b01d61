"""TFLite model metadata for MediaPipe Tasks: what `TextClassifier` and `TextEmbedder` read from a BERT-input
model, written with the `flatbuffers` package.

MediaPipe reads the metadata flatbuffer (`metadata_schema.fbs`, file identifier "M001") from the model's
`metadata` entry named "TFLITE_METADATA", and the files it names (the WordPiece vocabulary, the label file)
from a zip archive appended to the model. mediapipe 1.2.2's own writer
(`mediapipe.tasks.python.metadata.metadata_writers`) cannot run from its wheel (it imports
`mediapipe.tasks.cc.metadata.python._pywrap_metadata_version`, which the wheel lacks), and
tflite-support's would pin protobuf < 4 beside TensorFlow's 6, so the few tables MediaPipe reads are built
here, their field slots as `metadata_schema.fbs` numbers them.

    ModelMetadata{name, description, subgraph_metadata: [SubGraphMetadata{
        input_tensor_metadata: [TensorMetadata{name: "ids" | "mask" | "segment_ids"}] in the model's input order,
        output_tensor_metadata: [TensorMetadata{name, associated_files: [labels.txt, TENSOR_AXIS_LABELS]}],
        input_process_units: [ProcessUnit{BertTokenizerOptions{vocab_file: [vocab.txt, VOCABULARY]}}]}],
      min_parser_version}

Example:
>>> model = with_bert_metadata(tflite_bytes, {"ids": 0, "mask": 2, "segment_ids": 1}, ["[PAD]", "the"],
...                            output_name="score", labels=["neg", "pos"])  # doctest: +SKIP
"""

from __future__ import annotations

import io
import zipfile
from typing import Sequence

import flatbuffers
import numpy as np

METADATA_NAME = "TFLITE_METADATA"  # the model's `metadata` entry MediaPipe looks for
METADATA_IDENTIFIER = b"M001"
TFLITE_IDENTIFIER = b"TFL3"
# BertTokenizerOptions came with metadata parser 1.1.0 (metadata_schema.fbs); nothing here is newer.
MIN_PARSER_VERSION = "1.1.0"
VOCAB_FILE = "vocab.txt"
LABEL_FILE = "labels.txt"
# The input tensor names MediaPipe's BertPreprocessorCalculator finds its three inputs by.
BERT_INPUTS = ("ids", "mask", "segment_ids")

# metadata_schema.fbs: AssociatedFileType and the ProcessUnitOptions union's member.
TENSOR_AXIS_LABELS = 2
VOCABULARY = 5
BERT_TOKENIZER_OPTIONS = 4


def with_bert_metadata(model: bytes, input_indices: dict[str, int], vocabulary: Sequence[str], output_name: str,
                       labels: Sequence[str] | None = None, name: str = "kbert",
                       description: str = "") -> bytes:
    """`model` with the metadata of a BERT-input text model, and its vocabulary (and labels) packed in.

    Args:
        model: a `.tflite` flatbuffer of one subgraph whose inputs are `ids`, `mask` and `segment_ids`.
        input_indices: `{"ids": i, "mask": j, "segment_ids": k}`: each input's position among the subgraph's
            inputs.
        vocabulary: the WordPiece tokens in id order (written as vocab.txt).
        output_name: the metadata name of the one output tensor.
        labels: the category names of a classification output in index order (labels.txt), or None.
        name: the model's name in the metadata.
        description: one line about the model.

    Returns:
        The model bytes with the metadata and, appended as a zip archive, vocab.txt (and labels.txt).

    Raises:
        ValueError: `input_indices` names other inputs than `BERT_INPUTS`.
    """
    if sorted(input_indices) != sorted(BERT_INPUTS) or sorted(input_indices.values()) != [0, 1, 2]:
        raise ValueError(f"input_indices must place {BERT_INPUTS} at 0, 1 and 2, got {input_indices}")
    files = {VOCAB_FILE: "".join(f"{token}\n" for token in vocabulary)}
    if labels is not None:
        files[LABEL_FILE] = "".join(f"{label}\n" for label in labels)
    metadata = _metadata(sorted(BERT_INPUTS, key=input_indices.__getitem__), output_name,
                         labels is not None, name, description)
    return _append_files(_with_metadata_buffer(model, metadata), files)


def _metadata(input_names: Sequence[str], output_name: str, labelled: bool, name: str, description: str) -> bytes:
    """The ModelMetadata flatbuffer."""
    b = flatbuffers.Builder(1024)
    inputs = [_table(b, 7, {0: b.CreateString(n)}) for n in input_names]
    output_files = [_associated_file(b, LABEL_FILE, "Category names, one a line, in score order.",
                                     TENSOR_AXIS_LABELS)] if labelled else []
    output = _table(b, 7, {0: b.CreateString(output_name), **({6: _vector(b, output_files)} if output_files else {})})
    vocab = _associated_file(b, VOCAB_FILE, "WordPiece vocabulary, one token a line, in id order.", VOCABULARY)
    tokenizer = _table(b, 1, {0: _vector(b, [vocab])})
    process_unit = _table(b, 2, {1: tokenizer}, uint8={0: BERT_TOKENIZER_OPTIONS})
    subgraph = _table(b, 10, {2: _vector(b, inputs), 3: _vector(b, [output]), 5: _vector(b, [process_unit])})
    root = _table(b, 8, {0: b.CreateString(name), 1: b.CreateString(description), 3: _vector(b, [subgraph]),
                         7: b.CreateString(MIN_PARSER_VERSION)})
    b.Finish(root, METADATA_IDENTIFIER)
    return bytes(b.Output())


def _associated_file(b: flatbuffers.Builder, name: str, description: str, kind: int) -> int:
    return _table(b, 5, {0: b.CreateString(name), 1: b.CreateString(description)}, int8={2: kind})


def _table(b: flatbuffers.Builder, slots: int, offsets: dict[int, int], int8: dict[int, int] | None = None,
           uint8: dict[int, int] | None = None) -> int:
    """A table of `slots` fields: references to objects built before it, and byte-wide scalars."""
    b.StartObject(slots)
    for slot, offset in offsets.items():
        b.PrependUOffsetTRelativeSlot(slot, offset, 0)
    for slot, value in (int8 or {}).items():
        b.PrependInt8Slot(slot, value, 0)
    for slot, value in (uint8 or {}).items():
        b.PrependUint8Slot(slot, value, 0)
    return b.EndObject()


def _vector(b: flatbuffers.Builder, offsets: Sequence[int]) -> int:
    """A vector of tables built before it."""
    b.StartVector(4, len(offsets), 4)
    for offset in reversed(offsets):
        b.PrependUOffsetTRelative(offset)
    return b.EndVector()


def _with_metadata_buffer(model: bytes, metadata: bytes) -> bytes:
    """`model` with `metadata` in a new buffer, named `METADATA_NAME` in its `metadata` list (replacing one)."""
    from tensorflow.lite.python import schema_py_generated as schema

    tree = schema.ModelT.InitFromObj(schema.Model.GetRootAsModel(model, 0))
    buffer = schema.BufferT()
    buffer.data = np.frombuffer(metadata, np.uint8)
    tree.buffers = list(tree.buffers or [])
    tree.metadata = [m for m in tree.metadata or [] if _name(m.name) != METADATA_NAME]
    tree.buffers.append(buffer)
    entry = schema.MetadataT()
    entry.name, entry.buffer = METADATA_NAME, len(tree.buffers) - 1
    tree.metadata.append(entry)
    b = flatbuffers.Builder(len(model) + len(metadata) + 1024)
    b.Finish(tree.Pack(b), TFLITE_IDENTIFIER)
    return bytes(b.Output())


def _name(value: bytes | str | None) -> str:
    return value.decode() if isinstance(value, bytes) else value or ""


def _append_files(model: bytes, files: dict[str, str]) -> bytes:
    """`model` with a zip archive of `files` (stored, uncompressed) after it, as MediaPipe reads them."""
    out = io.BytesIO(model)
    out.seek(0, io.SEEK_END)
    with zipfile.ZipFile(out, "a", compression=zipfile.ZIP_STORED) as archive:
        for name, text in files.items():
            archive.writestr(name, text.encode("utf-8"))
    return out.getvalue()


def packed_files(model: bytes) -> dict[str, bytes]:
    """The files packed after a model's flatbuffer: `{name: content}` (what `with_bert_metadata` appended).

    Example:
    >>> packed_files(_append_files(b"TFL3", {"labels.txt": "neg\\npos\\n"}))
    {'labels.txt': b'neg\\npos\\n'}
    """
    with zipfile.ZipFile(io.BytesIO(model)) as archive:
        return {name: archive.read(name) for name in archive.namelist()}
