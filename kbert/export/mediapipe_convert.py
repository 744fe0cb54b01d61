"""The MediaPipe flavour of the TFLite export: a model that `mediapipe.tasks.text.TextClassifier` or
`TextEmbedder` runs (`kbert export --mediapipe` writes it as OUT/model.mediapipe.tflite).

MediaPipe's text tasks run a model of one subgraph, and tokenize outside it. A string-input model is fed
the raw text, but MediaPipe's op resolver has none of tensorflow-text's TFLite kernels
(FastWordpieceTokenizeWithOffsets, ...) and its Python API takes no custom op registerers, so kbert's
in-graph tokenizer cannot run there (model.tflite is also three signatures, and MediaPipe refuses more than
one subgraph). The MediaPipe file therefore takes what MediaPipe's BERT preprocessing gives: three int32
`(1, sequence_length)` tensors `ids`, `mask` and `segment_ids` ([CLS] text [SEP], zero-padded), with the
WordPiece vocabulary in its metadata, and answers with the task's one output (`Task.mediapipe_output`):
the probabilities, whose categories are named by a label file in the metadata, or the sentence embedding.

MediaPipe's WordPiece tokenizer is not BERT's: it lower-cases ASCII letters only, keeps accents and
control characters, and splits on white space, ASCII punctuation, Unicode punctuation (\\p{P}) and CJK
ideographs. A text of lower-case ASCII gets kbert's ids; "Café" does not (kbert's uncased tokenizer reads
"cafe"). A cased vocabulary is refused: MediaPipe would lower-case what the model saw in capitals.
"""

from __future__ import annotations

import contextlib
import os
import tempfile

import tensorflow as tf

import kbert.file_io as file_io
from kbert.export.export_source import ExportSource
from kbert.export.mediapipe_metadata import BERT_INPUTS, with_bert_metadata
from kbert.export.model_precision import with_precision
from kbert.precision import check_quantize

MEDIAPIPE_FILE = "model.mediapipe.tflite"
# MediaPipe's input names -> kbert's model inputs.
MODEL_INPUT = {"ids": "token_ids", "mask": "padding_mask", "segment_ids": "segment_ids"}


def refusal(source: ExportSource) -> str | None:
    """Why `source` can have no MediaPipe file (said before anything is written), or None."""
    task, tokenizer, kind = source.task, source.tokenizer, type(source.tokenizer).__name__
    if task.mediapipe_task is None:
        return (f"no MediaPipe export of a {task.name} model ({task.summary}): MediaPipe's text tasks are "
                "TextClassifier (one text -> a score per named category) and TextEmbedder (one text -> a "
                "vector), and neither answers this task")
    if task.takes_pair:
        return (f"no MediaPipe export of a {task.name} model of text pairs: MediaPipe's BERT preprocessing "
                "packs one text ([CLS] text [SEP], segment ids all 0)")
    why = getattr(tokenizer, "mediapipe_unsupported", None)
    if why:
        return f"no MediaPipe export with a {kind}: {why}"
    return task.mediapipe_refusal()


def convert(source: ExportSource, quantize: str = "none", workdir: str | os.PathLike | None = None) -> bytes:
    """Converts an `ExportSource` to a `.tflite` flatbuffer for MediaPipe Tasks, metadata included.

    Args:
        source: `kbert.export.ExportSource`; its model runs in float32 here, whatever its policy.
        quantize: one of `kbert.precision.QUANTIZE_MODES`, as for model.tflite.
        workdir: an empty or absent directory, on any file system, for the intermediate SavedModel the
            converter reads (left for the caller to delete); None uses a local temporary directory.

    Returns:
        The model bytes: one subgraph, inputs `ids`, `mask`, `segment_ids` int32 `(1, sequence_length)`, one
        float32 output (`source.task.mediapipe_output`), the vocabulary (and labels) packed in.

    Raises:
        ValueError: the source cannot be run by MediaPipe (`refusal` says why).

    Example:
    >>> pathlib.Path("model.mediapipe.tflite").write_bytes(convert(source))  # doctest: +SKIP
    """
    check_quantize(quantize)
    why = refusal(source)
    if why:
        raise ValueError(why)
    # float32 whatever policy the model was trained under, as model.tflite (`tflite_convert.convert`)
    model, task, length = with_precision(source.model, "float32"), source.task, source.sequence_length
    specs = [tf.TensorSpec([1, length], tf.int32, name=name) for name in BERT_INPUTS]

    @tf.function(input_signature=specs)
    def answer(ids, mask, segment_ids):
        x = {MODEL_INPUT["ids"]: ids, MODEL_INPUT["mask"]: mask, MODEL_INPUT["segment_ids"]: segment_ids}
        return task.mediapipe_output(x, model(x, training=False))

    (output,) = answer.get_concrete_function().structured_outputs  # the one tensor MediaPipe reads
    # Through a SavedModel, as model.tflite: converted from the concrete function alone, the Keras 3
    # model's weights come out wrong (NaN answers).
    module = tf.Module()
    module.weights = [v.value for v in model.weights]  # each weight's tf.Variable once, as `ServingModule`
    module.answer = answer
    staging = tempfile.TemporaryDirectory() if workdir is None else contextlib.nullcontext(file_io.fspath(workdir))
    with staging as tmp:
        tf.saved_model.save(module, tmp, signatures={"serving_default": answer})
        converter = tf.lite.TFLiteConverter.from_saved_model(tmp)
        converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS]  # MediaPipe has no Flex either
        if quantize != "none":
            converter.optimizations = [tf.lite.Optimize.DEFAULT]
        if quantize == "float16":
            converter.target_spec.supported_types = [tf.float16]
        flat = converter.convert()
    return with_bert_metadata(flat, _input_indices(flat), source.tokenizer.vocabulary, output,
                              labels=source.labels if task.mediapipe_task == "TextClassifier" else None,
                              name=f"kbert {task.name}", description=f"{task.summary}: MediaPipe {task.mediapipe_task}")


def _input_indices(flat: bytes) -> dict[str, int]:
    """Each named input's position among the subgraph's inputs (from the file's signature)."""
    from tensorflow.lite.python import schema_py_generated as schema

    model = schema.Model.GetRootAsModel(flat, 0)
    if model.SubgraphsLength() != 1:
        raise ValueError(f"MediaPipe runs models of one subgraph; the converter wrote {model.SubgraphsLength()}")
    subgraph, signature = model.Subgraphs(0), model.SignatureDefs(0)
    positions = {subgraph.Inputs(i): i for i in range(subgraph.InputsLength())}
    return {signature.Inputs(i).Name().decode(): positions[signature.Inputs(i).TensorIndex()]
            for i in range(signature.InputsLength())}
