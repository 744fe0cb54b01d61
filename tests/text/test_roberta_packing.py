"""BertPreprocessor with a byte-level BPE tokenizer: RoBERTa's `<s> A </s></s> B </s>` against HF."""

import numpy as np
import pytest
import tensorflow as tf

from kbert.text import BertPreprocessor

PAIRS = [("Hello world, how are you?", "Fine, thanks."),
         ("A much longer first text that keeps going and going " * 4, "short"),
         ("short", "A much longer second text that keeps going and going " * 4),
         ("Equal length one " * 6, "Equal length two " * 6),
         ("", "only the second"), ("only the first", ""), ("", "")]


def hf_pack(hf, pairs, length):
    """HF's RoBERTa encoding with truncation ("longest_first") and padding to `length`."""
    first, second = zip(*pairs)
    out = hf(list(first), list(second), truncation=True, max_length=length, padding="max_length")
    return out["input_ids"], out["attention_mask"]


@pytest.mark.parametrize("length", [8, 12, 16, 32, 64])
def test_pairs_match_hf_with_truncation(bpe_tok, hf_roberta, length):
    """round_robin is HF's longest_first when the budget (length - 4) is even."""
    pre = BertPreprocessor(bpe_tok, sequence_length=length, truncate="round_robin")
    out = pre(tuple(tf.constant(t) for t in zip(*PAIRS)))
    ids, mask = hf_pack(hf_roberta, PAIRS, length)
    assert out["token_ids"].numpy().tolist() == ids
    assert out["padding_mask"].numpy().astype(int).tolist() == mask
    assert not out["segment_ids"].numpy().any()  # one segment id: RoBERTa's type_vocab_size is 1


@pytest.mark.parametrize("length", [5, 9, 33])
def test_odd_budget_matches_hf_when_the_first_text_is_longer(bpe_tok, hf_roberta, length):
    pre = BertPreprocessor(bpe_tok, sequence_length=length)
    pairs = [p for p in PAIRS if len(bpe_tok(p[0]).numpy()) > len(bpe_tok(p[1]).numpy())]
    out = pre(tuple(tf.constant(t) for t in zip(*pairs)))
    assert out["token_ids"].numpy().tolist() == hf_pack(hf_roberta, pairs, length)[0]


@pytest.mark.parametrize("length", [4, 8, 64])
def test_single_texts_match_hf(bpe_tok, hf_roberta, length):
    texts = [p[0] for p in PAIRS]
    out = BertPreprocessor(bpe_tok, sequence_length=length)(tf.constant(texts))
    ref = hf_roberta(texts, truncation=True, max_length=length, padding="max_length")
    assert out["token_ids"].numpy().tolist() == ref["input_ids"]
    assert out["padding_mask"].numpy().astype(int).tolist() == ref["attention_mask"]


def test_hand_checked_layout(bpe_tok):
    a, b = bpe_tok("Hi").numpy().tolist(), bpe_tok("yo").numpy().tolist()
    out = BertPreprocessor(bpe_tok, sequence_length=len(a) + len(b) + 6)(("Hi", "yo"))
    assert out["token_ids"].numpy().tolist() == [0, *a, 2, 2, *b, 2, 1, 1]
    assert out["segment_ids"].numpy().tolist() == [0] * (len(a) + len(b) + 6)
    with pytest.raises(ValueError, match="no room for a pair"):
        BertPreprocessor(bpe_tok, sequence_length=3)(("a", "b"))


def test_offsets_and_word_ids_follow_the_layout(bpe_tok, hf_roberta):
    question, context = "Who wrote it?", "It was  written by\nAda Lovelace, in 1843."
    pre = BertPreprocessor(bpe_tok, sequence_length=40)
    out = pre.call_with_offsets((tf.constant([question]), tf.constant([context])))
    ref = hf_roberta([question], [context], return_offsets_mapping=True, max_length=40, truncation=True,
                     padding="max_length")
    assert out["token_ids"].numpy().tolist() == ref["input_ids"]
    offsets = np.stack([out["start_offsets"].numpy()[0], out["end_offsets"].numpy()[0]], 1).tolist()
    assert [tuple(o) for o in offsets] == [tuple(o) for o in ref["offset_mapping"][0]]
    words = out["word_ids"].numpy()[0].tolist()
    ids = out["token_ids"].numpy()[0].tolist()
    special = [w for w, i in zip(words, ids) if i in (bpe_tok.cls_token_id, bpe_tok.sep_token_id, bpe_tok.pad_token_id)]
    assert len(special) > 4 and set(special) == {-1}
    n = len(bpe_tok(question).numpy())
    context_words = [w for w in words[n + 3:] if w >= 0]
    # "It" "was" " " "written" "by" "\n" "Ada" "Lovelace," "in" "1843.": ten words in the context.
    assert context_words[0] == 0 and max(context_words) == 9


def test_config_round_trip(bpe_tok):
    pre = BertPreprocessor(bpe_tok, sequence_length=16)
    clone = BertPreprocessor.from_config(pre.get_config())
    assert type(clone.tokenizer).__name__ == "ByteLevelBpeTokenizer"
    texts = (tf.constant(["one text"]), tf.constant(["and another"]))
    assert clone(texts)["token_ids"].numpy().tolist() == pre(texts)["token_ids"].numpy().tolist()
