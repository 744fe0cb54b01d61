"""`ServingModule`: tokenizer + packer + task model + the task's decoding as string-in `tf.function`s."""

from __future__ import annotations

from typing import Any, Callable

import keras
import tensorflow as tf

from kbert.tasks.base import Task
from kbert.tasks.serving import STRING, ServingInputs
from kbert.text import BertTokenizer


class ServingModule(tf.Module):
    """Strings in, predictions out: the signatures of a kbert export.

    Written as a plain `tf.Module` rather than `keras.export.ExportArchive`: the archive saves every
    weight twice (once per Keras variable, once per captured `tf.Variable`), while this module tracks each
    weight's `tf.Variable` exactly once and captures the Keras model only in function closures. The
    vocabulary lives in the graph (tensorflow-text's WordPiece model buffer and a string constant).

    Signatures (all inputs are batched `tf.string` of any batch size, `[batch]`):
        tokenize(text) -> token_ids (batch, n) int32 padded with [PAD], num_tokens (batch,)
        the task's own: `preprocess` (-> token_ids, segment_ids, padding_mask) and `serving_default`,
        and any others its `serving_functions` makes, with the inputs its `serving_inputs` declares
        (one text or a text pair by default) and the outputs its docstring lists.

    Args:
        model: the Keras task model (or a `BertEncoder` for the encoder task). Called with
            `training=False`, so dropout is off.
        tokenizer: `BertTokenizer`. For TFLite pass a `kbert.text.TFLiteBertTokenizer` (same ids and
            character offsets): no string slicing is then in the graph, since TFLite has no kernel for it.
        task: the `kbert.tasks.Task` (its settings and labels, e.g. `model.task` of a loaded model
            directory). `serving_default` takes a text pair when `task.takes_pair`.
        sequence_length: the longest packed input; shorter batches run at their own length.
        truncate: "round_robin" or "waterfall".

    Raises:
        ValueError: a signature's inputs differ from what the task declares.

    Example:
    >>> task = kbert.tasks.ClassificationTask(labels=["neg", "pos"])  # doctest: +SKIP
    >>> module = ServingModule(model, tokenizer, task)  # doctest: +SKIP
    >>> tf.saved_model.save(module, "out", signatures=module.signatures())  # doctest: +SKIP
    """

    def __init__(self, model: keras.Model, tokenizer: BertTokenizer, task: Task, sequence_length: int = 128,
                 truncate: str = "round_robin"):
        super().__init__(name="kbert_serving")
        self.task = task
        pair = task.takes_pair
        # Each weight's tf.Variable once (Keras variables wrap them; tracking both would save both).
        self.weights = [v.value for v in model.weights]
        # The resources a tokenizer holds are captured by the graph: the SavedModel saves and restores those
        # it tracks (byte-level BPE's lookup tables; SentencePiece's model, which `tokenize_with_offsets` uses).
        self.tokenizer_resources = tokenizer_resources(tokenizer)
        inputs = ServingInputs(model, tokenizer, sequence_length, truncate)
        self.with_strings = inputs.with_strings

        @tf.function(input_signature=[STRING])
        def tokenize(text):
            ids = inputs.token_ids(text)
            return {"token_ids": ids.to_tensor(default_value=tokenizer.pad_token_id),
                    "num_tokens": tf.cast(ids.row_lengths(), tf.int32)}

        self._fns: dict[str, Callable] = {"tokenize": tokenize, **task.serving_functions(inputs, pair)}
        self._inputs = {"tokenize": ("text",), **task.serving_inputs(pair)}
        for name, fn in self._fns.items():
            setattr(self, name, fn)
        for name, fn in self._fns.items():
            takes = input_names(fn)
            if takes != self._inputs.get(name):
                raise ValueError(f"{type(task).__name__}: signature {name!r} takes {takes}, but the task's "
                                 f"serving_inputs declares {self._inputs.get(name)}")

    def signatures(self) -> dict[str, Any]:
        """`{signature name: tf.function}` for `tf.saved_model.save(..., signatures=...)`."""
        return dict(self._fns)

    def signature_inputs(self) -> dict[str, tuple[str, ...]]:
        """`{signature name: its input names in call order}`, as the task declares them."""
        return dict(self._inputs)

    def signature_config(self) -> dict[str, dict[str, Any]]:
        """What the export's config file records per signature: `inputs` (in call order), `outputs`
        (sorted) and `trim` (`{count output: [the padded outputs it trims]}`, those this signature has)."""
        config = {}
        for name, fn in self._fns.items():
            outputs = sorted(fn.get_concrete_function().structured_outputs)
            trim = {count: [o for o in padded if o in outputs]
                    for count, padded in self.task.trimmed_outputs.items() if count in outputs}
            config[name] = {"inputs": list(self._inputs[name]), "outputs": outputs, "trim": trim}
        return config


def tokenizer_resources(tokenizer: Any) -> list[Any]:
    """The resources (`tf.saved_model.experimental.TrackableResource`) that a tokenizer holds, directly or in a
    `tf.Module` of its own (tensorflow-text's `SentencepieceTokenizer` holds its model as one): each as the
    object that holds it, for a module to track.

    Example:
    >>> tokenizer_resources(BertTokenizer(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "the"]))
    []
    """
    def is_resource(value: Any) -> bool:
        return isinstance(value, tf.saved_model.experimental.TrackableResource)

    return [value for value in vars(tokenizer).values()
            if is_resource(value) or (isinstance(value, tf.Module) and any(map(is_resource, vars(value).values())))]


def input_names(fn: Callable) -> tuple[str, ...]:
    """The input names of a `tf.function` with an input signature, in call order."""
    return tuple(spec.name for spec in fn.get_concrete_function().structured_input_signature[0])
