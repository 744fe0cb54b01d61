"""`kbert vocab`: learn a WordPiece (BERT), SentencePiece (ALBERT) or byte-level BPE (RoBERTa) vocabulary from text
files."""

from __future__ import annotations

import argparse
import dataclasses

from kbert.cli.flags import add_dataclass_flags, collect
from kbert.text.text_files import DEFAULT_ENCODING_ERRORS, ENCODING_ERRORS

# What `--kind` learns: BERT's WordPiece vocab.txt, ALBERT's spiece.model or RoBERTa's vocab.json + merges.txt.
VOCAB_KINDS = ("wordpiece", "sentencepiece", "bpe")


@dataclasses.dataclass
class VocabSettings:
    """The settings of `kbert vocab`, one flag each.

    Args:
        input: list of str. Text files, one text a line.
        size: int. The target vocabulary size.
        out: str. The vocab.txt to write (wordpiece), or the directory for spiece.model (sentencepiece) or
            vocab.json + merges.txt (bpe).
        lowercase: bool. Uncased (lower-case, strip accents); wordpiece and sentencepiece.
        min_count: int. Rarer tokens of the text are ignored.
        quiet: bool. No progress bar.
        encoding_errors: str. Bytes that are not UTF-8: "replace", "ignore" or "strict".
        kind: str. "wordpiece" (BERT), "sentencepiece" (ALBERT) or "bpe" (RoBERTa's byte-level BPE).

    Example:
        >>> VocabSettings(["corpus.txt"], size=8000, out="vocab.txt").min_count
        2
    """

    input: list[str] = dataclasses.field(metadata={"help": "text files, one text a line"})
    size: int = dataclasses.field(metadata={"help": "target vocabulary size"})
    out: str = dataclasses.field(metadata={
        "help": "vocab.txt to write (wordpiece), or the directory for spiece.model and tokenizer_config.json "
                "(sentencepiece) or vocab.json + merges.txt (bpe)"})
    lowercase: bool = dataclasses.field(default=False, metadata={
        "switch": True, "help": "uncased (lower-case, strip accents); wordpiece and sentencepiece"})
    min_count: int = dataclasses.field(default=2, metadata={"help": "ignore rarer words (bpe: rarer pairs)"})
    quiet: bool = dataclasses.field(default=False, metadata={"switch": True, "help": "no progress bar"})
    encoding_errors: str = dataclasses.field(default=DEFAULT_ENCODING_ERRORS, metadata={
        "choices": ENCODING_ERRORS,
        "help": "bytes that are not UTF-8: replace (default), ignore or strict; a warning names each file with "
                "repaired lines and how many"})
    kind: str = dataclasses.field(default="wordpiece", metadata={
        "choices": VOCAB_KINDS,
        "help": "wordpiece: BERT's vocab.txt; sentencepiece: ALBERT's Unigram spiece.model with <pad> <unk> [CLS] "
                "[SEP] [MASK] at 0-4, loadable by kbert.load_tokenizer(OUT) and transformers' AutoTokenizer; bpe: "
                "RoBERTa's byte-level BPE (vocab.json + merges.txt, <s> <pad> </s> <unk> first, <mask> last)"})


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Adds the command's flags, one per field of `VocabSettings`."""
    add_dataclass_flags(parser, VocabSettings, required=("input", "size", "out"))


def run(args: argparse.Namespace) -> int:
    """Learns the vocabulary and writes it: one token a line (wordpiece), spiece.model (sentencepiece), or
    vocab.json + merges.txt (bpe)."""
    import kbert.file_io as file_io
    from kbert.text.vocabulary import learn_vocabulary

    settings = VocabSettings(**collect(args, VocabSettings))
    if settings.kind == "bpe":
        return _run_bpe(settings)
    if settings.kind == "sentencepiece":
        return _run_sentencepiece(settings)
    vocab = learn_vocabulary(
        settings.input, settings.size, lowercase=settings.lowercase, min_count=settings.min_count,
        verbose=not settings.quiet, encoding_errors=settings.encoding_errors,
    )
    file_io.write_text(settings.out, "\n".join(vocab) + "\n")  # creates the directory
    print(f"wrote {len(vocab)} tokens to {settings.out}")
    return 0


def _run_bpe(settings: VocabSettings) -> int:
    """`--kind bpe`: a byte-level BPE vocabulary in the directory `--out`, loadable by `kbert.load_tokenizer`."""
    from kbert.text.byte_level_vocab import learn_byte_level_bpe, write_vocabulary

    if settings.lowercase:
        raise ValueError("--lowercase is for wordpiece vocabularies; a byte-level BPE keeps the text as it is")
    tokens, merges = learn_byte_level_bpe(settings.input, settings.size, min_count=settings.min_count,
                                          verbose=not settings.quiet, encoding_errors=settings.encoding_errors)
    path = write_vocabulary(settings.out, tokens, merges)
    print(f"wrote {len(tokens)} tokens and {len(merges)} merges to {path} and merges.txt")
    return 0


def _run_sentencepiece(settings: VocabSettings) -> int:
    """`--kind sentencepiece`: ALBERT's spiece.model in the directory `--out`, loadable by `kbert.load_tokenizer`."""
    from kbert.text.sentencepiece_tokenizer import SentencePieceTokenizer
    from kbert.text.sentencepiece_vocabulary import learn_sentencepiece

    proto = learn_sentencepiece(settings.input, settings.size, lowercase=settings.lowercase,
                                strip_accents=settings.lowercase, verbose=not settings.quiet,
                                encoding_errors=settings.encoding_errors)
    tokenizer = SentencePieceTokenizer(proto, lowercase=settings.lowercase, strip_accents=settings.lowercase)
    path = tokenizer.save_vocabulary(settings.out)
    print(f"wrote {tokenizer.vocabulary_size()} pieces to {path}")
    return 0
