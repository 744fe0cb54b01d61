"""Documents of sentence strings to token ids, with the word boundaries whole-word masking needs.

English words are WordPiece's own (`##` pieces join the previous token at masking time); Chinese words
come from jieba, since a Chinese WordPiece vocabulary holds single characters.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence

from kbert.pretraining_data.instances import Document, as_sentence


def segment_chinese_words(text: str) -> list[str]:
    """Splits Chinese text into words with jieba (the word segmenter for Chinese whole-word masking).

    Args:
        text: str. One sentence.

    Returns:
        The words, whitespace-only pieces dropped.

    Example:
        >>> segment_chinese_words("我爱北京天安门")
        ['我', '爱', '北京', '天安门']
    """
    import logging

    import jieba

    jieba.setLogLevel(logging.WARNING)
    return [word for word in jieba.lcut(text) if word.strip()]


def tokenize_documents(
    documents: Iterable[Sequence[str]],
    tokenize: Callable[[list[str]], list[list[int]]],
    language: str = "en",
    batch_sentences: int = 512,
) -> Iterator[Document]:
    """Tokenizes documents of sentence strings, several documents per tokenizer call.

    Args:
        documents: an iterable of documents (lists of sentence strings), e.g. a `TextCorpus`.
        tokenize: Callable. Maps a list of strings to a list of token-id lists (see `tokenizer_fn`).
        language: str. "en": every token starts a word (`##` pieces are grouped at masking time).
            "zh": each sentence is segmented with jieba and the tokens of one word are marked as one
            word, for Chinese whole-word masking. A word that tokenizes to no ids (a combining mark,
            an emoji modifier or a format character on its own, which BERT's normalisation deletes)
            adds neither ids nor flags, so every sentence has one flag per token.
        batch_sentences: int. Sentences per tokenizer call.

    Returns:
        An iterator of documents of `(token_ids, word_starts)` sentences.
    """
    if language not in ("en", "zh"):
        raise ValueError(f"language must be 'en' or 'zh', got {language!r}.")
    pending: list[list[str]] = []

    def flush() -> Iterator[Document]:
        if language == "zh":
            words = [[segment_chinese_words(s) for s in doc] for doc in pending]
            flat = [w for doc in words for sentence in doc for w in sentence]
            pieces = iter(tokenize(flat)) if flat else iter(())
            for doc in words:
                out = []
                for sentence in doc:
                    ids, starts = [], []
                    for _ in sentence:
                        word_ids = list(next(pieces))
                        if not word_ids:  # a word that normalisation deletes (e.g. a lone combining mark)
                            continue
                        ids.extend(word_ids)
                        starts.extend([True] + [False] * (len(word_ids) - 1))
                    out.append((ids, starts))
                yield out
        else:
            flat = [s for doc in pending for s in doc]
            tokenized = iter(tokenize(flat)) if flat else iter(())
            for doc in pending:
                yield [as_sentence(next(tokenized)) for _ in doc]
        pending.clear()

    count = 0
    for document in documents:
        pending.append(list(document))
        count += len(document)
        if count >= batch_sentences:
            yield from flush()
            count = 0
    yield from flush()


def tokenizer_fn(tokenizer) -> Callable[[list[str]], list[list[int]]]:
    """Adapts a tokenizer with `tokenize(tf.Tensor of strings) -> tf.RaggedTensor` to `tokenize_documents`."""
    import tensorflow as tf

    def tokenize(texts: list[str]) -> list[list[int]]:
        return tokenizer.tokenize(tf.constant(texts, dtype=tf.string)).to_list()

    return tokenize
