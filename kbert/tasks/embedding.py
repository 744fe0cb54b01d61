"""Sentence embeddings as a task: fine-tuned on text pairs with in-batch negatives, scored by STS correlation
or retrieval, saved as a kbert model directory that is also a sentence-transformers one, served as vectors.

Examples come from CSV / TSV / JSONL files or tfds datasets with two text features (`read_embedding_pairs`).
`load_sentence_encoder` builds the whole sentence model of a sentence-transformers directory.
"""

from __future__ import annotations

import dataclasses
import os
import re
from typing import Any, Callable, ClassVar, Sequence

import keras
import numpy as np
import tensorflow as tf

import kbert.file_io as file_io
from kbert.constants import PROMPT_SIGNATURE
from kbert.file_io.model_source import resolve_model
from kbert.convert.checkpoints import load_pretrained, save_pretrained
from kbert.convert.sentence_dense import SentenceDense, read_dense_weights
from kbert.convert.sentence_transformers import (SentenceTransformersConfig, read_sentence_transformers,
                                                 write_sentence_transformers)
from kbert.metrics.embedding import retrieval_metrics, similarity_metrics
from kbert.tasks.base import Example, Task, TaskData
from kbert.tasks.classification import read_classification
from kbert.tasks.embedding_data import embedding_dataset
from kbert.tasks.embedding_loss import MultipleNegativesRankingLoss
from kbert.tasks.embedding_model import BertSentenceEmbedder
from kbert.tasks.embedding_settings import EmbeddingSettings
from kbert.tasks.readers.local_files import is_text_lines, read_text_lines
from kbert.tasks.readers.sources import parse_source
from kbert.tasks.serving import ServingInputs, named
from kbert.tasks.soft_targets import vector_mse
from kbert.text import BertPreprocessor, BertTokenizer, load_tokenizer

PAIR = ("text", "text_pair")


@dataclasses.dataclass
class EmbeddingTask(EmbeddingSettings, Task):
    """Text pairs -> sentence embeddings: `BertSentenceEmbedder` trained with `MultipleNegativesRankingLoss`.

    Training reads (text, positive[, hard negative]) rows; evaluation reads (text, text_pair[, score]) rows
    and reports `spearman` / `pearson` with a score column (STS), else retrieval over the pairs, each text
    looking for its own pair among all of them (`recall@1`, `recall@10`, `mrr@10`, `ndcg@10`). The model
    directory is also a sentence-transformers directory (`write_extras`), and the export serves
    `serving_default(text) -> embedding` (with the default prompt, if any) and, per prompt NAME,
    `prompt_NAME(text) -> embedding`.

    Args:
        The fields of `EmbeddingSettings` (its flags and `task.json` entries).

    Example:
    >>> task = EmbeddingTask(text_column="anchor", text_pair_column="positive", negative_column="negative")
    >>> task.loss().group_size
    3
    """

    model_class: ClassVar[type] = BertSentenceEmbedder

    def _read(self, source: str | os.PathLike, split: str) -> list[Example]:
        # Training reads no scores and evaluation no hard negatives: the other split's file need not have them.
        return read_embedding_pairs(source, text_column=self.text_column, text_pair_column=self.text_pair_column,
                                    negative_column=self.negative_column if split == "train" else None,
                                    label_column=self.label_column if split == "validation" else None,
                                    header=self.header)

    @property
    def columns(self) -> tuple[str, ...]:
        """The texts of a training example, in the loss's order: anchor, positive (, hard negative)."""
        return PAIR + (("negative",) if self.negative_column is not None else ())

    def dataset(self, examples: Sequence[Example], preprocessor: BertPreprocessor, batch_size: int,
                training: bool, seed: int = 0, group_by_length: bool = True,
                drop_remainder: bool = False) -> TaskData:
        """Training: full batches of (anchor, positive[, negative]) rows; otherwise (text, text_pair) rows."""
        data = embedding_dataset(examples, preprocessor, self.columns if training else PAIR, batch_size=batch_size,
                                 shuffle=training, seed=seed, with_labels=training, full_batches=training,
                                 group_by_length=group_by_length, drop_remainder=drop_remainder)
        size = len(examples) // batch_size * batch_size if training else len(examples)
        return TaskData(data, size)

    def build_model(self, encoder: keras.Model, dropout: float = 0.1, feature_based: bool = False) -> keras.Model:
        """`BertSentenceEmbedder` with the task's pooling; `dropout` is unused (no head layers: the encoder
        keeps its own dropout)."""
        if feature_based:
            raise ValueError("an embed model has no head of its own: with a frozen encoder there is nothing to "
                             "train")
        return BertSentenceEmbedder(encoder, pooling=self.pooling, normalize=self.normalize)

    def check_model(self, model: keras.Model) -> None:
        if (model.pooling, model.normalize) != (self.pooling, self.normalize):
            raise ValueError(f"the model pools with {model.pooling!r} (normalize={model.normalize}) but the task "
                             f"says {self.pooling!r} (normalize={self.normalize})")

    def distillation_loss(self, teacher_outputs: Any, student_outputs: Any, inputs: dict[str, tf.Tensor],
                          temperature: float) -> tf.Tensor:
        """The mean squared difference of the student's embeddings from the teacher's, row by row (Reimers &
        Gurevych 2020); no temperature. The student must be as wide as the teacher."""
        return vector_mse(teacher_outputs, student_outputs)

    def unlabelled_examples(self, source: str | os.PathLike, limit: int | None = None) -> list[Example]:
        """A `.txt` file holds one text a line; any other source is read with the task's text (and pair)
        columns. A text without a pair (or hard negative) is its own: each row of an example is distilled alone."""
        if is_text_lines(source):
            texts = [{"text": line, "text_pair": None} for line in read_text_lines(source)]
        else:
            texts = read_classification(source, text_column=self.text_column, text_pair_column=self.text_pair_column,
                                        label_column=None, header=self.header)
        examples = [{column: e.get(column) or e["text"] for column in self.columns} for e in texts]
        return self._unlabelled(examples, source, limit)

    def loss(self) -> MultipleNegativesRankingLoss:
        """In-batch negatives with the task's scale and symmetry, over its rows per example."""
        return MultipleNegativesRankingLoss(self.scale, self.symmetric, group_size=len(self.columns))

    def score(self, examples: Sequence[Example], batches: list[tuple[Any, dict[str, Any]]],
              extra: Any) -> dict[str, Any]:
        vectors = np.concatenate([outputs for outputs, _ in batches]).reshape(len(examples), len(PAIR), -1)
        if self.label_column is not None:
            return similarity_metrics(vectors[:, 0], vectors[:, 1], [e["label"] for e in examples])
        return retrieval_metrics(vectors[:, 0], vectors[:, 1])

    # -- serving -------------------------------------------------------------------------------------
    def prompt_text(self, prompt_name: str | None = None) -> str:
        """The text prepended to each text: the prompt `prompt_name`'s, or with None the default prompt's
        (none: ""), as sentence-transformers picks it.

        Example:
        >>> task = EmbeddingTask(prompts={"query": "query: ", "passage": "passage: "}, default_prompt_name="query")
        >>> task.prompt_text(), task.prompt_text("passage")
        ('query: ', 'passage: ')
        """
        prompts = self.prompts or {}
        name = self.default_prompt_name if prompt_name is None else prompt_name
        if name is not None and name not in prompts:
            raise ValueError(f"no prompt {name!r}: the model's prompts are {sorted(prompts)}")
        return prompts[name] if name is not None else ""

    def serving_inputs(self, pair: bool = False) -> dict[str, tuple[str, ...]]:
        """One text: a pair packed as one sequence is not what a sentence embedding is of."""
        prompts = {PROMPT_SIGNATURE.format(name): ("text",) for name in self.prompts or {}}
        return {"preprocess": ("text",), "serving_default": ("text",), **prompts}

    def serving_functions(self, inputs: ServingInputs, pair: bool = False) -> dict[str, Callable]:
        """serving_default(text) -> embedding (batch, dimension) float32, unit length with `normalize`, of the
        text with the default prompt prepended (if any); `prompt_NAME(text)` the same with prompt NAME's text;
        `preprocess(text)` the packed inputs of serving_default.

        The prompt is joined to the text in the graph, before the tokenizer, as sentence-transformers does.
        TFLite has no kernel to join strings: its export has no prompt signatures, and a model with a default
        prompt is refused there.
        """
        def with_prompt(prompt: str) -> Callable[[tf.Tensor], tf.Tensor]:
            return lambda text: tf.strings.join([prompt, text]) if prompt else text

        def embed(prompt: str) -> Callable:
            def answer(text):
                x = inputs.pack(with_prompt(prompt)(text))
                return self.mediapipe_output(x, inputs.run_model(x))  # the one output, as MediaPipe's file has it

            return named(answer, False)

        default = self.prompt_text()
        if default and not inputs.with_strings:
            raise ValueError(f"the default prompt {self.default_prompt_name!r} ({default!r}) is joined to each "
                             f"text, and TFLite has no kernel to join strings: export the SavedModel")
        functions = {"preprocess": named(lambda text: inputs.pack(with_prompt(default)(text)), False),
                     "serving_default": embed(default)}
        for name, prompt in (self.prompts or {}).items() if inputs.with_strings else ():
            if not re.fullmatch(r"[A-Za-z0-9_.\-]+", name):
                raise ValueError(f"prompt name {name!r}: a signature name takes letters, digits, '_', '.' and "
                                 f"'-' only")
            functions[PROMPT_SIGNATURE.format(name)] = embed(prompt)
        return functions

    @staticmethod
    def published_model_reader(path: str | os.PathLike) -> keras.Model:
        """A kbert embed model directory or a sentence-transformers model as published (`load_sentence_encoder`)."""
        return load_sentence_encoder(path)

    mediapipe_task: ClassVar[str | None] = "TextEmbedder"

    def mediapipe_output(self, inputs: dict[str, tf.Tensor], outputs: tf.Tensor) -> dict[str, tf.Tensor]:
        """`embedding` (batch, hidden): the model's sentence vector."""
        return {"embedding": outputs}

    def mediapipe_refusal(self) -> str | None:
        """A default prompt: MediaPipe tokenizes the text it is given, and its file cannot put the prompt first."""
        if self.prompt_text():
            return (f"no MediaPipe export of a model with a default prompt ({self.default_prompt_name!r}): "
                    "MediaPipe tokenizes the text it is given, and its file cannot put the prompt in front")
        return None

    # -- the model directory ---------------------------------------------------------------------------
    def write_extras(self, model: keras.Model, directory: str, tokenizer: BertTokenizer,
                     sequence_length: int) -> None:
        """What sentence-transformers loads the model directory with: the encoder in Hugging Face's layout
        (config.json, model.safetensors), modules.json, 1_Pooling/config.json, the Dense modules,
        sentence_bert_config.json (`max_seq_length`: the model's sequence length) and the prompts
        (config_sentence_transformers.json). The vocabulary is the model directory's own."""
        save_pretrained(model.encoder, directory, format="hf")
        dense = tuple(SentenceDense(**layer) for layer in model.dense)
        config = SentenceTransformersConfig(self.pooling, self.normalize, max_seq_length=int(sequence_length),
                                            dense=dense, prompts=dict(self.prompts or {}),
                                            default_prompt_name=self.default_prompt_name)
        write_sentence_transformers(directory, config, model.encoder.bert_config.hidden_size,
                                    [layer.get_weights() for layer in model.dense_layers])


def read_embedding_pairs(
    source: str | os.PathLike,
    *,
    text_column: str | int | None = None,
    text_pair_column: str | int | None = None,
    negative_column: str | int | None = None,
    label_column: str | int | None = None,
    header: bool = True,
) -> list[Example]:
    """Reads text pairs, with an optional hard negative and an optional similarity score per pair.

    Args:
        source: a .csv / .tsv / .jsonl file or `tfds:NAME[:SPLIT]` (a dataset with two text features).
        text_column: the first text (files: default "text"; tfds: the dataset's own first text).
        text_pair_column: the second text (files: default "text_pair"; tfds: the dataset's own second text).
        negative_column: optional hard-negative text column.
        label_column: optional numeric score column.
        header: CSV / TSV files: the first line names the columns (False: columns are numbers).

    Returns:
        list of {"text", "text_pair", "label" (float or None)} and, with `negative_column`, "negative".

    Raises:
        ValueError: a row lacks a text or a score is not a number (naming the file and line), or a tfds
            dataset has no second text feature kbert knows and none is named.

    Example:
    >>> import tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "pairs.jsonl"
    >>> _ = path.write_text('{"q": "a cat", "d": "cats purr", "neg": "dogs bark"}\\n')
    >>> read_embedding_pairs(path, text_column="q", text_pair_column="d", negative_column="neg")
    [{'text': 'a cat', 'text_pair': 'cats purr', 'label': None, 'negative': 'dogs bark'}]
    """
    is_file = parse_source(source).kind == "file"
    if is_file and text_column is None:
        text_column = "text"
    if is_file and text_pair_column is None:
        text_pair_column = "text_pair"
    examples = read_classification(source, text_column=text_column, text_pair_column=text_pair_column,
                                   label_column=label_column, regression=True, header=header)
    if any(e["text_pair"] is None for e in examples):
        raise ValueError(f"{os.fspath(source)}: no second text; name its column (text_pair_column)")
    for index, example in enumerate(examples):
        if example["label"] is not None and not isinstance(example["label"], float):
            raise ValueError(f"{os.fspath(source)}: example {index}: score {example['label']!r} is not a number")
    if negative_column is not None:
        negatives = read_classification(source, text_column=negative_column, label_column=None, header=header)
        for example, negative in zip(examples, negatives, strict=True):
            example["negative"] = negative["text"]
    return examples


def load_sentence_encoder(path: str | os.PathLike) -> BertSentenceEmbedder:
    """The whole sentence model of a sentence-transformers directory (or of a kbert embed model directory).

    `kbert.load_pretrained(DIR)` reads the encoder alone; this adds the directory's pooling, Dense modules
    and normalisation, its prompts, its tokenizer (lower-casing first where `do_lower_case` says so) and its
    `max_seq_length`. `model.encode(texts, prompt_name=...)` then embeds as `SentenceTransformer.encode` does.

    Args:
        path: a sentence-transformers directory (modules.json: Transformer, Pooling [, Dense ...] [, Normalize]),
            or a
            model directory written for the embed task (`kbert finetune embed`), or a model name such as
            "hf://sentence-transformers/all-MiniLM-L6-v2" (`kbert.file_io.model_source`).

    Returns:
        A `BertSentenceEmbedder` with `task` (an `EmbeddingTask` of the directory's pooling, normalisation
        and prompts), `tokenizer` and `preprocessor` (packing to `max_seq_length`, as
        sentence-transformers truncates), as `kbert.load_model` gives them.

    Raises:
        ValueError: what the directory describes is not a model kbert reproduces exactly (a LayerNorm
            module, a pooling mode kbert does not have, ...), or a kbert model directory of another task.

    Example:
    >>> model = load_sentence_encoder(kbert.pretrained.minilm_path())  # doctest: +SKIP
    >>> model.encode(["A cat sat."]).shape  # doctest: +SKIP
    (1, 384)
    """
    # Imported here: model_dir's `TASKS` is read when it is imported, which must not be before every task
    # registered by another package is.
    from kbert.tasks.model_dir import TASK_FILE, load_model

    directory = resolve_model(path)
    if file_io.isfile(file_io.join(directory, TASK_FILE)):
        model = load_model(directory, compile=False)
        if not isinstance(model.task, EmbeddingTask):
            raise ValueError(f"{directory} holds a {model.task.name} model, not a sentence embedding model")
        return model
    config = read_sentence_transformers(directory)
    transformer = file_io.join(directory, config.transformer_path) if config.transformer_path else directory
    encoder = load_pretrained(transformer)
    tokenizer = load_tokenizer(transformer)
    if config.do_lower_case and not tokenizer.lowercase:  # lower-cased first, then the cased tokenizer's steps
        tokenizer = BertTokenizer(tokenizer.get_vocabulary(), lowercase=True, strip_accents=tokenizer.strip_accents)
    task = EmbeddingTask(pooling=config.pooling, normalize=config.normalize, prompts=config.prompts or None,
                         default_prompt_name=config.default_prompt_name)
    model = BertSentenceEmbedder(encoder, pooling=config.pooling, normalize=config.normalize,
                                 dense=[dense.layer_config() for dense in config.dense])
    for layer, dense in zip(model.dense_layers, config.dense):
        layer.set_weights(read_dense_weights(directory, dense))
    length = config.max_seq_length or encoder.bert_config.max_position_embeddings
    model.task, model.tokenizer, model.preprocessor = task, tokenizer, BertPreprocessor(tokenizer, length)
    return model
