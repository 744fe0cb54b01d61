"""`Task`: what is particular to one kind of downstream problem, behind one interface.

A task reads its examples (files and tfds), settles its label vocabulary, builds its tf.data pipeline
and its Keras model, scores predictions with its metrics and builds its serving signatures, decoding
predictions the same way in both. Fine-tuning, evaluation, model directories, the export and the CLI ask
the task (found by name in `kbert.tasks.registry`) and never branch on its kind. (TF Model Garden's
`official/nlp/tasks/` is the pattern: one Task class per problem.)
"""

from __future__ import annotations

import dataclasses
import math
import os
from typing import Any, Callable, ClassVar, NamedTuple, Sequence

import keras
import tensorflow as tf

from kbert.tasks.example import Example
from kbert.tasks.serving import MODEL_INPUTS, ServingInputs
from kbert.tasks.settings import TaskSettings
from kbert.text import BertPreprocessor, BertTokenizer

# What `Task.read_examples` reads examples for.
SPLITS = ("train", "validation")


class TaskData(NamedTuple):
    """A task's tf.data pipeline over some examples.

    Attributes:
        dataset: batched `tf.data.Dataset` of (inputs, labels), or inputs alone for prediction.
        size: int. Model rows per epoch (examples, or the rows a task cuts them into, e.g. windows).
        extra: what decoding needs besides the model outputs (e.g. the windows), or None.
    """

    dataset: tf.data.Dataset
    size: int
    extra: Any = None


def _text_length(example: Example) -> int:
    """Characters of an example's text fields (strings and lists of strings): a cheap length to sort by."""
    total = 0
    for value in example.values():
        if isinstance(value, str):
            total += len(value)
        elif isinstance(value, (list, tuple)):
            total += sum(len(item) for item in value if isinstance(item, str))
    return total


def inference_function(model: keras.Model, signature: dict[str, tf.TensorSpec]) -> tf.types.experimental.PolymorphicFunction:
    """`model(x, training=False)` as a tf.function of `signature`, traced once per model and signature.

    Kept on the model, so that every evaluation of it (after each epoch, then at the end) reuses one
    trace. Traced without AutoGraph: the call has no Python control flow on tensors to convert.
    """
    functions = model.__dict__.setdefault("_kbert_inference_functions", {})
    key = tuple(sorted((name, tuple(spec.shape), spec.dtype.name) for name, spec in signature.items()))
    if key not in functions:
        functions[key] = tf.function(lambda x: model(x, training=False), input_signature=[signature],
                                     autograph=False)
    return functions[key]


@dataclasses.dataclass
class Task(TaskSettings):
    """Base class of the downstream tasks; subclasses are dataclasses of their settings.

    A subclass's fields are its settings: saved in the model directory's `task.json` and, unless a field
    says `metadata={"cli": False}`, offered as `kbert finetune COMMAND` flags of the same name. They are
    declared in a `TaskSettings` subclass of a module without TensorFlow, which the task class extends.

    Args:
        labels: optional list of str. The label vocabulary in id order (tasks with named labels).
    """

    model_class: ClassVar[type | None] = None

    # -- examples and labels -------------------------------------------------------------------------
    def read_examples(self, source: str | os.PathLike, limit: int | None = None,
                      split: str = "train") -> list[Example]:
        """Raw examples from a file or `tfds:NAME[:SPLIT]`, the first `limit` of them.

        Args:
            source: a file path or `tfds:NAME[:SPLIT]`.
            limit: optional int. Keep only the first `limit` examples.
            split: "train" or "validation": what the examples are for. A task whose settings select a
                part of a source for each (e.g. a range of its records) reads that split's part. Not a
                tfds split: a tfds source names its own (`tfds:NAME:SPLIT`, default train).

        Raises:
            ValueError: the source has no examples, or `split` is neither "train" nor "validation".
        """
        if split not in SPLITS:
            raise ValueError(f"split must be one of {SPLITS}, got {split!r}")
        examples = self._read(source, split)
        if not examples:
            raise ValueError(f"{os.fspath(source)}: no examples")
        return examples[:limit] if limit else examples

    def _read(self, source: str | os.PathLike, split: str) -> list[Example]:
        """The task's reader: every example of `source` that `split` selects."""
        raise NotImplementedError

    def prepare(self, source: str | os.PathLike, examples: Sequence[Example]) -> Task:
        """The task as the training data settles it (label vocabulary, regression); default: itself."""
        return self

    def check_labels(self, examples: Sequence[Example]) -> None:
        """Raises ValueError naming the first label that is not in the vocabulary; default: no labels."""

    # -- model ---------------------------------------------------------------------------------------
    def dataset(self, examples: Sequence[Example], preprocessor: BertPreprocessor, batch_size: int,
                training: bool, seed: int = 0, group_by_length: bool = True,
                drop_remainder: bool = False) -> TaskData:
        """The tf.data pipeline: shuffled (inputs, labels) for training, inputs in order otherwise.

        `group_by_length` batches training examples of similar token counts together
        (`kbert.data_pipeline.index_batches`, where an epoch of one sorted run stays random), so dynamic
        padding pads less. `drop_remainder` (with a `padding="fixed"` preprocessor) gives the fixed shapes
        a compiled step needs: the short last batch dropped, every feature and label `(batch_size,)` or
        `(batch_size, sequence_length)` in the dataset's `element_spec`, no grouping."""
        raise NotImplementedError

    def build_model(self, encoder: keras.Model, dropout: float = 0.1, feature_based: bool = False) -> keras.Model:
        """The Keras task model (head) on `encoder`."""
        raise NotImplementedError

    @classmethod
    def matches(cls, model: keras.Model) -> bool:
        """Whether `model` is this task's model."""
        return cls.model_class is not None and isinstance(model, cls.model_class)

    def check_model(self, model: keras.Model) -> None:
        """Raises ValueError when the model and the task's settings disagree (e.g. label count)."""

    def loss(self) -> Any:
        """The loss fine-tuning compiles the model with: "auto", the model's own `default_loss()`, unless the
        task's settings shape it (the embed task's scale and hard negatives)."""
        return "auto"

    # -- distillation --------------------------------------------------------------------------------
    def distillation_loss(self, teacher_outputs: Any, student_outputs: Any, inputs: dict[str, tf.Tensor],
                          temperature: float) -> tf.Tensor:
        """How far the student's outputs are from the teacher's on one batch: a float32 scalar.

        `kbert.training.Distiller` trains on it, mixed with the task's own loss where the batch has labels.
        The task says which outputs count and how (`kbert.tasks.soft_targets`): soft targets at
        `temperature` for logits, the teacher's numbers for scores and vectors.

        Args:
            teacher_outputs: the teacher model's outputs on `inputs` (in inference mode).
            student_outputs: the student model's outputs on `inputs`.
            inputs: the model inputs (`token_ids`, `segment_ids`, `padding_mask`).
            temperature: float > 0. Softens both distributions of a logits output.
        """
        raise NotImplementedError(f"the {self.name} task has no distillation loss")

    # How a teacher of this task is read: a function of the path that reads the task's model directories and the
    # layout its models are published in (the embed task: sentence-transformers'); None: model directories only.
    published_model_reader: ClassVar[Callable[[str | os.PathLike], keras.Model] | None] = None

    def unlabelled_examples(self, source: str | os.PathLike, limit: int | None = None) -> list[Example]:
        """Texts without labels, as training examples with placeholder labels, for distillation.

        The placeholders let the texts go through the task's own training pipeline (`dataset`); the
        Distiller gives their label loss no weight, so the student learns the teacher's outputs alone on
        them. Each task reads what it can read without labels (see its override).

        Raises:
            ValueError: the source has no texts.
        """
        raise NotImplementedError(f"the {self.name} task cannot read texts without labels")

    @staticmethod
    def _unlabelled(examples: list[Example], source: str | os.PathLike, limit: int | None) -> list[Example]:
        """The first `limit` of `examples`; ValueError when there are none."""
        if not examples:
            raise ValueError(f"{os.fspath(source)}: no texts")
        return examples[:limit] if limit else examples

    # -- evaluation ----------------------------------------------------------------------------------
    def evaluate(self, model: keras.Model, examples: Sequence[Example], preprocessor: BertPreprocessor,
                 batch_size: int = 64, verbose: int = 1) -> dict[str, Any]:
        """Runs `model` over `examples` and returns the task's metrics (the content of metrics.json)."""
        self.check_labels(examples)
        # Batches of similar lengths pad less (dynamic padding): run and score the examples shortest
        # first. Every task's metrics are sums over examples, so the order does not change them.
        examples = sorted(examples, key=_text_length)
        data = self.dataset(examples, preprocessor, batch_size, training=False)
        # The model's rows (e.g. QA windows) in order, batch_size at a time: the last batch may be short.
        progress = keras.utils.Progbar(math.ceil(data.size / batch_size), verbose=verbose, unit_name="batch")
        # A plain traced call, not `predict_on_batch`: under a several-replica strategy Keras 3.15 feeds
        # the whole batch to every replica and concatenates the copies.
        # One trace for every batch: the signature leaves batch and sequence length open (dynamic padding
        # and a short last batch would otherwise retrace, about 1 s each for all-MiniLM-L6-v2 here).
        signature = {k: v for k, v in data.dataset.element_spec.items() if k in MODEL_INPUTS}
        forward = inference_function(model, signature)
        batches = []
        for step, inputs in enumerate(data.dataset):
            kept = {k: inputs.pop(k).numpy() for k in list(inputs) if k not in MODEL_INPUTS}
            batches.append((tf.nest.map_structure(lambda t: t.numpy(), forward(inputs)), kept))
            progress.update(step + 1)  # the last batch ends the bar's line
        metrics = self.score(examples, batches, data.extra)
        metrics["num_examples"] = len(examples)
        return metrics

    def score(self, examples: Sequence[Example], batches: list[tuple[Any, dict[str, Any]]],
              extra: Any) -> dict[str, Any]:
        """Metrics from the model outputs of each batch (numpy) and the inputs the model did not take."""
        raise NotImplementedError

    # -- serving -------------------------------------------------------------------------------------
    # What the export records in its config file and `kbert predict` reads back (see `serving_inputs`).
    # Example requests, per signature input name: the export's warmup requests, and documentation.
    example_requests: ClassVar[dict[str, tuple[str, ...]]] = {
        "text": ("kbert warmup request", "a"), "text_pair": ("second segment", "")}
    # Outputs padded per row, each row's length given by a count output: {count output: padded outputs}.
    trimmed_outputs: ClassVar[dict[str, tuple[str, ...]]] = {}
    # Whether `serving_functions` packs with character offsets (`ServingInputs.pack_with_offsets`).
    serving_uses_offsets: ClassVar[bool] = False

    @property
    def takes_pair(self) -> bool:
        """Whether the task's serving_default takes a text pair by default."""
        return False

    def serving_inputs(self, pair: bool = False) -> dict[str, tuple[str, ...]]:
        """Each signature `serving_functions` makes -> its input names in call order.

        The default is one text (`text`), or a pair (`text`, `text_pair`) when `pair`; a one-text export
        also gets `serving_pair` and `preprocess_pair` (`kbert.tasks.serving.sentence_functions`).
        """
        one, two = ("text",), ("text", "text_pair")
        if pair:
            return {"preprocess": two, "serving_default": two}
        return {"preprocess": one, "serving_default": one, "preprocess_pair": two, "serving_pair": two}

    def serving_functions(self, inputs: ServingInputs, pair: bool = False) -> dict[str, Callable]:
        """The task's signatures (`preprocess`, `serving_default`, ...) as tf.functions of strings, with the
        inputs `serving_inputs(pair)` declares."""
        raise NotImplementedError

    # -- MediaPipe -----------------------------------------------------------------------------------
    # The MediaPipe Tasks text API that runs this task's model: "TextClassifier" (scores of named
    # categories) or "TextEmbedder" (a vector); None when MediaPipe has no task for it.
    mediapipe_task: ClassVar[str | None] = None

    def mediapipe_output(self, inputs: dict[str, tf.Tensor], outputs: Any) -> dict[str, tf.Tensor]:
        """The one output MediaPipe's task reads, `{name: (1, n) float32}`, from the packed inputs of one text
        and the model's outputs (`kbert.export.mediapipe_convert`): the scores for `TextClassifier`, the
        vector for `TextEmbedder`."""
        raise NotImplementedError(f"the {self.name} task has no MediaPipe output")

    def mediapipe_refusal(self) -> str | None:
        """Why this task's settings keep its model out of MediaPipe's file (said before anything is written),
        beyond having no `mediapipe_task`; default: None."""
        return None

    # -- the model directory ---------------------------------------------------------------------------
    def write_extras(self, model: keras.Model, directory: str, tokenizer: BertTokenizer,
                     sequence_length: int) -> None:
        """Writes files of the task's own into a model directory; default: nothing (the embed task writes what
        sentence-transformers loads the directory with).

        Args:
            model: the task model `kbert.save_model` is saving (model.keras is written by then).
            directory: the model directory (a local path or a URL: write through `kbert.file_io`).
            tokenizer: the model's `BertTokenizer` (save_model writes vocab.txt itself).
            sequence_length: the packing length recorded in task.json.
        """

    # -- task.json -----------------------------------------------------------------------------------
    def info(self) -> dict[str, Any]:
        """The settings as saved in task.json: {"task": name, field: value, ...}."""
        return {"task": self.name, **dataclasses.asdict(self)}

    @classmethod
    def from_info(cls, info: dict[str, Any]) -> Task:
        """The task of a task.json dict (fields it does not know are ignored)."""
        return cls(**{f.name: info[f.name] for f in dataclasses.fields(cls) if f.name in info})

