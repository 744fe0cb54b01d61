"""Tiny random ALBERT, RoBERTa and DistilBERT checkpoints in Hugging Face's layout, with their own tokenizer files,
for the fine-tuning and export tests of every family: RoBERTa with a byte-level BPE learned by HF `tokenizers`
(vocab.json + merges.txt), ALBERT with a WordPiece vocab.txt (as the Chinese ALBERTs ship), DistilBERT with a
WordPiece vocab.txt and the files `DistilBertTokenizer` saves."""

from __future__ import annotations

import json
import pathlib

import pytest

SIZES = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64,
             max_position_embeddings=130, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)


def bpe_files(directory: pathlib.Path, lines: list[str], size: int = 300) -> int:
    """Learns a byte-level BPE from `lines` with HF `tokenizers` and writes RoBERTa's vocab.json + merges.txt
    (<s> <pad> </s> <unk> = 0-3, <mask> last) into `directory`; returns the vocabulary size."""
    tokenizers = pytest.importorskip("tokenizers")
    trainer = tokenizers.ByteLevelBPETokenizer()
    trainer.train_from_iterator(lines, vocab_size=size - 1, min_frequency=1, show_progress=False,
                                special_tokens=["<s>", "<pad>", "</s>", "<unk>"])
    trainer.save_model(str(directory))
    vocab = json.loads((directory / "vocab.json").read_text(encoding="utf-8"))
    vocab["<mask>"] = len(vocab)
    (directory / "vocab.json").write_text(json.dumps(vocab, ensure_ascii=False), encoding="utf-8")
    return len(vocab)


def roberta_dir(directory: pathlib.Path, lines: list[str]) -> pathlib.Path:
    """A random 2-layer HF `RobertaModel` (saved by transformers) with a BPE vocabulary learned from `lines`."""
    transformers = pytest.importorskip("transformers")
    pytest.importorskip("torch")
    directory.mkdir(parents=True, exist_ok=True)
    size = bpe_files(directory, lines)
    config = transformers.RobertaConfig(vocab_size=size, type_vocab_size=1, pad_token_id=1, bos_token_id=0,
                                        eos_token_id=2, **SIZES)
    transformers.RobertaModel(config).save_pretrained(str(directory))
    return directory


def albert_dir(directory: pathlib.Path, vocabulary: list[str]) -> pathlib.Path:
    """A random 2-layer HF `AlbertModel` (saved by transformers) with a WordPiece vocab.txt of `vocabulary`."""
    transformers = pytest.importorskip("transformers")
    pytest.importorskip("torch")
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "vocab.txt").write_text("\n".join(vocabulary) + "\n", encoding="utf-8")
    config = transformers.AlbertConfig(vocab_size=len(vocabulary), embedding_size=16, pad_token_id=0,
                                       hidden_act="gelu_new", **SIZES)
    transformers.AlbertModel(config).save_pretrained(str(directory))
    return directory


def albert_sentencepiece_dir(directory: pathlib.Path, lines: list[str], size: int = 80) -> pathlib.Path:
    """A random 2-layer HF `AlbertModel` with ALBERT's own tokenizer: a SentencePiece model learned from `lines`
    (`<pad>` `<unk>` `[CLS]` `[SEP]` `[MASK]` at 0-4), as `spiece.model` + `tokenizer_config.json`."""
    transformers = pytest.importorskip("transformers")
    pytest.importorskip("torch")
    from kbert.text.sentencepiece_tokenizer import SentencePieceTokenizer
    from kbert.text.sentencepiece_vocabulary import learn_sentencepiece

    directory.mkdir(parents=True, exist_ok=True)
    corpus = directory.parent / f"{directory.name}_corpus.txt"
    corpus.write_text("\n".join(lines) + "\n", encoding="utf-8")
    tokenizer = SentencePieceTokenizer(learn_sentencepiece([corpus], size=size, verbose=False))
    tokenizer.save_vocabulary(directory)
    config = transformers.AlbertConfig(vocab_size=tokenizer.vocabulary_size(), embedding_size=16,
                                       pad_token_id=tokenizer.pad_token_id, hidden_act="gelu_new", **SIZES)
    transformers.AlbertModel(config).save_pretrained(str(directory))
    return directory


def distilbert_dir(directory: pathlib.Path, vocabulary: list[str], masked_lm: bool = False) -> pathlib.Path:
    """A random 2-layer HF `DistilBertModel` (or `DistilBertForMaskedLM`), saved by transformers, with a WordPiece
    vocab.txt of `vocabulary` and the tokenizer files `DistilBertTokenizer` writes (lowercasing)."""
    transformers = pytest.importorskip("transformers")
    torch = pytest.importorskip("torch")
    directory.mkdir(parents=True, exist_ok=True)
    vocab = directory / "vocab.txt"
    vocab.write_text("\n".join(vocabulary) + "\n", encoding="utf-8")
    transformers.DistilBertTokenizer(str(vocab), do_lower_case=True).save_pretrained(str(directory))
    config = transformers.DistilBertConfig(
        vocab_size=len(vocabulary), dim=SIZES["hidden_size"], n_layers=SIZES["num_hidden_layers"],
        n_heads=SIZES["num_attention_heads"], hidden_dim=SIZES["intermediate_size"],
        max_position_embeddings=SIZES["max_position_embeddings"], dropout=0.0, attention_dropout=0.0)
    torch.manual_seed(0)
    model = (transformers.DistilBertForMaskedLM if masked_lm else transformers.DistilBertModel)(config)
    model.save_pretrained(str(directory))
    return directory
