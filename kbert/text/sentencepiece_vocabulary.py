"""`learn_sentencepiece`: an ALBERT SentencePiece model (Unigram) from text files; `compile_charsmap`: a
character map in the form a SentencePiece model holds it."""

from __future__ import annotations

import io
import os
import tempfile
from collections.abc import Iterator

import keras

import kbert.file_io as file_io
from kbert.text.sentencepiece_normalization import case_and_accents
from kbert.text.text_files import DEFAULT_ENCODING_ERRORS, check_encoding_errors, read_lines

# ALBERT's special pieces and their ids, as its spiece.model holds them: "<pad>" 0, "<unk>" 1, then the
# control pieces "[CLS]" 2, "[SEP]" 3, "[MASK]" 4, which text never produces.
ALBERT_SPECIALS = {"pad_id": 0, "pad_piece": "<pad>", "unk_id": 1, "unk_piece": "<unk>", "bos_id": -1,
                   "eos_id": -1, "control_symbols": ["[CLS]", "[SEP]", "[MASK]"]}


def prepared_lines(files: list[str | os.PathLike], lowercase: bool, strip_accents: bool,
                   encoding_errors: str = DEFAULT_ENCODING_ERRORS, verbose: bool = False) -> Iterator[str]:
    """The lines of text files with the normalisation that `SentencePieceTokenizer` applies before its model
    (quote pairs, accents, case; the model's own character map is SentencePiece's to apply)."""
    table = case_and_accents(lowercase, strip_accents)
    progress = keras.utils.Progbar(None, unit_name="line") if verbose else None
    seen = 0
    for path in files:
        for line in read_lines(path, encoding_errors):
            seen += 1
            if progress is not None and seen % 10000 == 0:
                progress.update(seen)
            yield line.replace("``", '"').replace("''", '"').translate(table)


def learn_sentencepiece(
    files: list[str | os.PathLike],
    size: int,
    lowercase: bool = True,
    strip_accents: bool = True,
    character_coverage: float = 0.9995,
    max_sentences: int = 10_000_000,
    verbose: bool = True,
    encoding_errors: str = DEFAULT_ENCODING_ERRORS,
) -> bytes:
    """Learns a SentencePiece Unigram model with ALBERT's special pieces from text files.

    The lines are read through `kbert.file_io` (any `tf.io.gfile` path) and streamed to the
    `sentencepiece` trainer, after the normalisation `SentencePieceTokenizer` gives text before its model
    (so an uncased model learns from lower-cased text); the trainer adds its nmt_nfkc character map.

    Args:
        files: text files, one text a line.
        size: the vocabulary size (at most; a small corpus may give fewer pieces).
        lowercase: learn an uncased model (HF `do_lower_case`).
        strip_accents: NFKD and delete marks first (HF `keep_accents=False`).
        character_coverage: share of the characters seen that get pieces of their own (rarer ones are
            `<unk>`); SentencePiece's default, suits most languages.
        max_sentences: lines sampled for training when there are more (SentencePiece keeps them in memory).
        verbose: show progress (lines read, then SentencePiece's log).
        encoding_errors: "strict", "replace" (default) or "ignore" for bytes that are not UTF-8.

    Returns:
        The model file's bytes: `<pad>` 0, `<unk>` 1, `[CLS]` 2, `[SEP]` 3, `[MASK]` 4, then the pieces.

    Example:
    >>> proto = learn_sentencepiece(["corpus.txt"], size=8000)  # doctest: +SKIP
    >>> SentencePieceTokenizer(proto)(["Hello!"])  # doctest: +SKIP
    """
    import sentencepiece

    check_encoding_errors(encoding_errors)
    files = [str(f) for f in files]
    for path in files:
        if not file_io.exists(path):
            raise FileNotFoundError(f"vocabulary input not found: {path}")
    if size <= len(ALBERT_SPECIALS["control_symbols"]) + 2:
        raise ValueError(f"size must exceed the 5 special pieces, got {size}")
    model = io.BytesIO()
    try:
        sentencepiece.SentencePieceTrainer.train(
            sentence_iterator=prepared_lines(files, lowercase, strip_accents, encoding_errors, verbose),
            model_writer=model, model_type="unigram", vocab_size=size, hard_vocab_limit=False,
            character_coverage=character_coverage, input_sentence_size=max_sentences,
            shuffle_input_sentence=True, max_sentence_length=1 << 16, num_threads=os.cpu_count() or 1,
            minloglevel=0 if verbose else 2, **ALBERT_SPECIALS)
    except RuntimeError as err:
        raise ValueError(f"SentencePiece could not learn a model from {files}: {err}") from err
    return model.getvalue()


def compile_charsmap(rules: dict[str, str]) -> bytes:
    """A SentencePiece `precompiled_charsmap` that replaces each key of `rules` by its value.

    SentencePiece applies such a map left to right, taking the longest key that matches at each place;
    text that no key matches stays as it is. The map is compiled by the sentencepiece library's own
    builder (its trainer's `normalization_rule_tsv`, on a throwaway model of a few characters): the
    double-array layout it writes is the one SentencePiece's readers, tensorflow-text's ops among them,
    expect.

    Args:
        rules: dict of str -> str. Non-empty keys without NUL; a value may be empty (the key is deleted).

    Returns:
        The map's bytes, for a model's `normalizer_spec.precompiled_charsmap`.

    Example:
    >>> from kbert.text.sentencepiece_model import charsmap_characters
    >>> charsmap_characters(compile_charsmap({"``": '"', "É": "e"}))  # the single characters' rules
    {201: 'e'}
    """
    import sentencepiece

    from kbert.text.sentencepiece_model import CHARSMAP, NORMALIZER_SPEC, fields

    if any(not key or "\0" in key for key in rules):
        raise ValueError("charsmap keys must be non-empty and hold no NUL")

    def hex_codes(text: str) -> str:
        return " ".join(f"{ord(c):X}" for c in text)

    with tempfile.TemporaryDirectory() as tmp:
        tsv, text = os.path.join(tmp, "rules.tsv"), os.path.join(tmp, "text.txt")
        with open(tsv, "w", encoding="utf-8") as f:
            f.writelines(f"{hex_codes(key)}\t{hex_codes(value)}\n" for key, value in rules.items())
        with open(text, "w", encoding="utf-8") as f:
            f.write("a b c\n" * 4)
        model = io.BytesIO()
        sentencepiece.SentencePieceTrainer.train(input=text, model_writer=model, model_type="char", vocab_size=6,
                                                 normalization_rule_tsv=tsv, minloglevel=2)
    normalizer = next(value for number, _, value in fields(model.getvalue()) if number == NORMALIZER_SPEC)
    return next(value for number, _, value in fields(normalizer) if number == CHARSMAP)
