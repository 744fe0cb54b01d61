"""Streaming text corpora for pretraining: local files (three layouts) or a `tfds` text dataset.

A corpus yields documents, each a list of sentences (strings). Files are read line by line, so a corpus
never has to fit in memory (in the "paragraphs" layout one file at a time), and a `TextCorpus` can be
iterated again (for example once per epoch). Bad bytes follow one policy, `encoding_errors`
(see `kbert.text.text_files`).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Sequence

import kbert.file_io as file_io
from kbert.text.text_files import DEFAULT_ENCODING_ERRORS, check_encoding_errors, read_lines

LAYOUTS = ("sentences", "documents", "paragraphs")
TFDS_PREFIX = "tfds:"

# A sentence ends at Chinese full-width 。！？ (and an ellipsis), at ASCII ! or ?, or at "." followed by
# whitespace, the end of the text or a CJK character; closing quotes/brackets stay with their sentence.
_SENTENCE_END = re.compile(
    r"(?:[。！？]+|…+|[!?]+|\.(?=\s|$|[\u3000-\u9fff\uff00-\uffef]))[\"'”’」』）)\]]*"
)
# Abbreviations after which "." does not end an English sentence.
_ABBREVIATIONS = frozenset(
    "mr mrs ms dr prof st jr sr vs etc e.g i.e no fig al inc ltd co mt".split()
)


def split_sentences(text: str) -> list[str]:
    """Splits one document into sentences at English and Chinese sentence-final punctuation.

    A rule-based splitter (no model), good enough to pair sentences for NSP/SOP. Not tensorflow-text's
    `StateBasedSentenceBreaker`: it breaks after every "." ("Mr." | "Smith ran.", "3." | "14").

    Args:
        text: str. A whole document on one line.

    Returns:
        The non-empty, stripped sentences in order.

    Example:
        >>> split_sentences("Mr. Smith ran. Did he? 我很好。你呢！")
        ['Mr. Smith ran.', 'Did he?', '我很好。', '你呢！']
    """
    sentences, start = [], 0
    for match in _SENTENCE_END.finditer(text):
        if match.group(0).startswith("."):
            word = text[start : match.start()].rsplit(None, 1)[-1:] or [""]
            if word[0].lower().lstrip("(\"'") in _ABBREVIATIONS:
                continue
        piece = text[start : match.end()].strip()
        if piece:
            sentences.append(piece)
        start = match.end()
    tail = text[start:].strip()
    if tail:
        sentences.append(tail)
    return sentences


def expand_inputs(inputs: str | Sequence[str]) -> list[str]:
    """Expands file globs (a string, comma-separated globs, or a list) into a sorted list of files.

    Args:
        inputs: str | Sequence[str]. Glob(s) of local text files.

    Returns:
        The matching files, sorted within each glob, without duplicates.

    Raises:
        FileNotFoundError: naming the first glob that matches no file.
    """
    patterns = [p for item in ([inputs] if isinstance(inputs, str) else inputs) for p in item.split(",")]
    files: list[str] = []
    for pattern in (p.strip() for p in patterns if p.strip()):
        matched = [f for f in file_io.glob(os.path.expanduser(pattern)) if file_io.isfile(f)]
        if not matched:
            raise FileNotFoundError(f"No input file matches {pattern!r}.")
        files.extend(f for f in matched if f not in files)
    return files


class TextCorpus:
    """A re-iterable stream of documents from text files or a `tfds` text dataset.

    Layouts:
        - `"sentences"` (BERT's): one sentence per line, a blank line between documents; every file
          also ends a document.
        - `"documents"`: one document per line, split with `split_sentences`.
        - `"paragraphs"` (books, articles): a whole file is one document; blank lines separate
          paragraphs, the wrapped lines of a paragraph are joined, and each paragraph is split with
          `split_sentences`. Instances then fill the sequence length instead of stopping at short
          paragraphs.

    Args:
        inputs: str | Sequence[str]. Glob(s) of UTF-8 text files (a string may hold several,
            comma-separated), or `"tfds:NAME[:SPLIT]"` for a `tfds` dataset already in the local `tfds`
            data dir (its `text_key` feature is one document per example).
        layout: str. `"sentences"` or `"documents"` (for tfds, `"documents"` is the natural choice).
        tfds_split: str. The split of a tfds dataset.
        text_key: str. The text feature of a tfds dataset.
        data_dir: str | None. The tfds data dir (None: tfds's default).
        encoding_errors: str. "strict", "replace" (default) or "ignore": what to do with bytes that are
            not UTF-8; repaired lines are counted and named per file in a warning.

    Example:
        >>> corpus = TextCorpus("books/*.txt", layout="sentences")  # doctest: +SKIP
        >>> for document in corpus:  # doctest: +SKIP
        ...     print(len(document), document[0])
    """

    def __init__(
        self,
        inputs: str | Sequence[str],
        layout: str = "sentences",
        tfds_split: str = "train",
        text_key: str = "text",
        data_dir: str | None = None,
        encoding_errors: str = DEFAULT_ENCODING_ERRORS,
    ) -> None:
        self.encoding_errors = check_encoding_errors(encoding_errors)
        if layout not in LAYOUTS:
            raise ValueError(f"layout must be one of {LAYOUTS}, got {layout!r}.")
        self.layout = layout
        self.tfds_split, self.text_key, self.data_dir = tfds_split, text_key, data_dir
        self.tfds_name: str | None = None
        self.files: list[str] = []
        if isinstance(inputs, str) and inputs.startswith(TFDS_PREFIX):
            self.tfds_name = inputs[len(TFDS_PREFIX) :]
            name, colon, split = self.tfds_name.rpartition(":")
            if colon and name and "." not in split:  # "tfds:NAME:SPLIT" (a ":1.0.0" version stays)
                self.tfds_name, self.tfds_split = name, split
        else:
            self.files = expand_inputs(inputs)

    def __iter__(self) -> Iterator[list[str]]:
        if self.tfds_name is not None:
            yield from self._iter_tfds()
            return
        for path in self.files:
            yield from self._iter_file(path)

    def _iter_file(self, path: str) -> Iterator[list[str]]:
        document: list[str] = []
        paragraph: list[str] = []
        for line in read_lines(path, self.encoding_errors):
            line = line.strip()
            if self.layout == "documents":
                sentences = split_sentences(line)
                if sentences:
                    yield sentences
            elif self.layout == "paragraphs":
                if line:
                    paragraph.append(line)
                elif paragraph:
                    document.extend(split_sentences(" ".join(paragraph)))
                    paragraph = []
            elif line:
                document.append(line)
            elif document:
                yield document
                document = []
        if paragraph:
            document.extend(split_sentences(" ".join(paragraph)))
        if document:
            yield document

    def _iter_tfds(self) -> Iterator[list[str]]:
        import tensorflow_datasets as tfds

        dataset = tfds.load(self.tfds_name, split=self.tfds_split, data_dir=self.data_dir, download=False)
        for example in tfds.as_numpy(dataset):
            if self.text_key not in example:
                raise KeyError(f"tfds dataset {self.tfds_name!r} has no feature {self.text_key!r}: "
                               f"it has {sorted(example)}.")
            text = example[self.text_key].decode("utf-8", self.encoding_errors)
            if self.layout != "sentences":
                document = [s for line in text.split("\n") for s in split_sentences(line)]
            else:
                document = [line.strip() for line in text.split("\n") if line.strip()]
            if document:
                yield document

    def __repr__(self) -> str:
        source = f"tfds:{self.tfds_name}" if self.tfds_name else f"{len(self.files)} files"
        return f"TextCorpus({source}, layout={self.layout!r})"
