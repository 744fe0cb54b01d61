"""Word starts in the three subword conventions, on hand-made vocabularies."""

import pytest

from kbert.text.word_pieces import starts_word, word_convention, word_start_flags

# "unaffable, cats" in each convention; True where a word starts.
WORDPIECE = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "un", "##aff", "##able", ",", "cat", "##s", "12", "##3"]
SENTENCEPIECE = ["<pad>", "<unk>", "[CLS]", "[SEP]", "[MASK]", "\u2581un", "aff", "able", ",", "\u2581cat", "s",
                 "\u2581", "12"]
BYTELEVEL = ["<s>", "<pad>", "</s>", "<unk>", "<mask>", "un", "aff", "able", ",", "\u0120cat", "s", "\u0120,", "12"]


def test_wordpiece_continues_with_double_hash():
    assert word_convention(WORDPIECE) == "wordpiece"
    assert word_start_flags(WORDPIECE)[5:] == [True, False, False, True, True, False, True, False]
    assert starts_word("#", "wordpiece") and not starts_word("##", "wordpiece")


def test_sentencepiece_starts_with_the_lower_one_eighth_block():
    assert word_convention(SENTENCEPIECE) == "sentencepiece"
    # ▁un aff able , ▁cat s ▁ 12: "," stands alone (punctuation), a lone "▁" starts the word its pieces follow.
    assert word_start_flags(SENTENCEPIECE)[5:] == [True, False, False, True, True, False, True, False]


def test_byte_level_bpe_starts_with_g_dot():
    assert word_convention(BYTELEVEL) == "bytelevel"
    # Byte-level BPE writes no marker on a text's first word: "un" continues whatever came before it.
    assert word_start_flags(BYTELEVEL)[5:] == [False, False, False, True, True, False, True, False]


def test_the_convention_is_the_marker_most_pieces_carry():
    # A SentencePiece vocabulary may hold a piece that looks like WordPiece's, and the other way round.
    assert word_convention(SENTENCEPIECE + ["##"]) == "sentencepiece"
    assert word_convention(WORDPIECE + ["\u2581x"]) == "wordpiece"
    chinese = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "我", "爱", "北", "京"]  # no marker at all
    assert word_convention(chinese) == "wordpiece" and all(word_start_flags(chinese))
    # Asked explicitly, the convention is not guessed: WordPiece's pieces read as SentencePiece.
    assert word_start_flags(["un", "##aff"], "sentencepiece") == [False, False]


def test_unknown_convention_is_named():
    with pytest.raises(ValueError, match="convention must be one of"):
        starts_word("un", "unigram")
