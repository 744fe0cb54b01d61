"""Instance creation: NSP/SOP labels and proportions, document boundaries, truncation and exact packing.

Token ids encode where they came from: id = 10_000 * document + 100 * sentence + position + 10, so every
instance can be traced back to its documents and sentences without a vocabulary.
"""

import itertools
import random

import pytest

from kbert.pretraining_data.instances import IS_NEXT, create_pretraining_instances, pack_pair, truncate_pair
from kbert.pretraining_data.tokenization import tokenize_documents

CLS, SEP = 2, 3


def make_corpus(num_docs=300, seed=0, sentences=(2, 9), length=(3, 12)):
    rng = random.Random(seed)
    return [[[10_000 * d + 100 * s + p + 10 for p in range(rng.randint(*length))]
             for s in range(rng.randint(*sentences))] for d in range(num_docs)]


def split(instance):
    first = instance.token_ids.index(SEP)
    return instance.token_ids[1:first], instance.token_ids[first + 1:-1]


def doc(token):
    return token // 10_000


def sentence(token):
    return token // 100


def test_pack_pair_exact():
    assert pack_pair([5, 6, 7], [8, 9], CLS, SEP) == ([2, 5, 6, 7, 3, 8, 9, 3], [0, 0, 0, 0, 0, 1, 1, 1])
    assert pack_pair([5], [], CLS, SEP) == ([2, 5, 3], [0, 0, 0])


def test_truncate_pair_trims_the_longer_side_from_either_end():
    rng = random.Random(3)
    for _ in range(50):
        a, b = list(range(0, 20)), list(range(100, 105))
        flags_a, flags_b = [True] * 20, [False] * 5
        truncate_pair(a, b, 12, rng, flags_a, flags_b)
        assert len(a) + len(b) == 12 and len(a) == len(flags_a) and len(b) == len(flags_b)
        assert b == list(range(100, 105))  # the shorter side is untouched until the sides are equal
        assert a == list(range(a[0], a[0] + 7))  # a contiguous window of the original


def test_packing_and_segment_ids_exact():
    instances = list(create_pretraining_instances(make_corpus(50), sequence_length=40, cls_id=CLS, sep_id=SEP,
                                                  seed=1))
    assert instances
    for inst in instances:
        a, b = split(inst)
        assert a and b and len(inst.token_ids) <= 40
        assert inst.token_ids == [CLS, *a, SEP, *b, SEP]
        assert inst.segment_ids == [0] * (len(a) + 2) + [1] * (len(b) + 1)
        assert len(inst.word_starts) == len(inst.token_ids)


@pytest.mark.parametrize("short_seq_prob", [0.0, 0.1])
def test_nsp_is_50_50_and_is_next_never_crosses_documents(short_seq_prob):
    instances = list(create_pretraining_instances(
        make_corpus(), sequence_length=48, cls_id=CLS, sep_id=SEP, objective="nsp",
        short_seq_prob=short_seq_prob, dupe_factor=3, seed=7, document_buffer=50))
    n = len(instances)
    labels = [i.next_sentence_label for i in instances]
    assert n > 1500
    assert abs(labels.count(IS_NEXT) / n - 0.5) < 4 * (0.25 / n) ** 0.5  # 4 sigma
    for inst in instances:
        a, b = split(inst)
        if inst.next_sentence_label == IS_NEXT:
            assert {doc(t) for t in a + b} == {doc(a[0])}
            assert sentence(a[-1]) <= sentence(b[0])  # B continues A (a sentence may be cut in two)
            assert a[-1] < b[0]
        else:
            assert doc(b[0]) != doc(a[0]) and len({doc(t) for t in b}) == 1


def test_sop_swaps_half_of_the_true_continuations():
    instances = list(create_pretraining_instances(
        make_corpus(), sequence_length=48, cls_id=CLS, sep_id=SEP, objective="sop", seed=11))
    n = len(instances)
    swapped = sum(i.next_sentence_label for i in instances)
    assert abs(swapped / n - 0.5) < 4 * (0.25 / n) ** 0.5
    for inst in instances:
        a, b = split(inst)
        assert {doc(t) for t in a + b} == {doc(a[0])}  # SOP never leaves the document
        assert (a[-1] < b[0]) == (inst.next_sentence_label == 0)  # swapped exactly when labelled 1


def test_objective_none_packs_one_segment():
    instances = list(create_pretraining_instances(make_corpus(30), sequence_length=30, cls_id=CLS, sep_id=SEP,
                                                  objective="none", seed=0))
    for inst in instances:
        assert inst.token_ids[0] == CLS and inst.token_ids[-1] == SEP and inst.token_ids.count(SEP) == 1
        assert set(inst.segment_ids) == {0} and inst.next_sentence_label == 0
        body = inst.token_ids[1:-1]
        assert len(inst.token_ids) <= 30 and {doc(t) for t in body} == {doc(body[0])}


def test_every_token_used_once_per_dupe_without_truncation():
    corpus = make_corpus(40, length=(2, 4))
    instances = list(create_pretraining_instances(corpus, sequence_length=500, cls_id=CLS, sep_id=SEP,
                                                  objective="none", short_seq_prob=0.0, dupe_factor=3, seed=5))
    tokens = sorted(t for i in instances for t in i.token_ids[1:-1])
    assert tokens == sorted(3 * [t for d in corpus for s in d for t in s])


def test_single_sentence_documents_one_token_sentences_and_empty_input():
    docs = [[[10_000 * d + p + 10 for p in range(6)]] for d in range(200)]
    instances = list(create_pretraining_instances(docs, sequence_length=32, cls_id=CLS, sep_id=SEP, seed=2))
    is_next = [i for i in instances if i.next_sentence_label == IS_NEXT]
    assert 0.35 < len(is_next) / len(instances) < 0.65
    for inst in is_next:  # the sentence cut in two at a random token
        a, b = split(inst)
        assert a + b == list(range(a[0], a[0] + 6))
    one_token = [[[10_000 * d + 10]] for d in range(10)]
    sop = list(create_pretraining_instances(one_token, sequence_length=16, cls_id=CLS, sep_id=SEP,
                                            objective="sop", seed=0))
    assert sop == []  # documented skip: a one-token sentence cannot be split into A and B
    assert list(create_pretraining_instances([[], [[]], []], sequence_length=16, cls_id=CLS, sep_id=SEP)) == []


def test_one_document_corpus_gives_only_true_continuations():
    instances = list(create_pretraining_instances(make_corpus(1, sentences=(30, 30)), sequence_length=24,
                                                  cls_id=CLS, sep_id=SEP, seed=0))
    assert instances and {i.next_sentence_label for i in instances} == {IS_NEXT}


def test_streams_an_endless_corpus_and_is_deterministic():
    def endless():
        for d in itertools.count():
            yield [[10_000 * d + 10, 10_000 * d + 11], [10_000 * d + 110, 10_000 * d + 111]]

    kwargs = dict(sequence_length=16, cls_id=CLS, sep_id=SEP, seed=9, document_buffer=8, instance_buffer=8)
    first = list(itertools.islice(create_pretraining_instances(endless(), **kwargs), 20))
    again = list(itertools.islice(create_pretraining_instances(endless(), **kwargs), 20))
    assert len(first) == 20 and first == again


def test_bad_arguments():
    with pytest.raises(ValueError, match="objective"):
        next(create_pretraining_instances([], sequence_length=16, cls_id=CLS, sep_id=SEP, objective="mlm"))
    with pytest.raises(ValueError, match="sequence_length"):
        next(create_pretraining_instances([], sequence_length=4, cls_id=CLS, sep_id=SEP))


def test_tokenize_documents_marks_jieba_words_for_chinese():
    chars = {}

    def tokenize(texts):  # one id per character, like BERT's CJK splitting
        return [[chars.setdefault(c, len(chars) + 5) for c in text] for text in texts]

    docs = list(tokenize_documents([["我爱北京天安门", "好"], ["北京"]], tokenize, language="zh"))
    ids, starts = docs[0][0]
    assert [c for c in "我爱北京天安门"] == [next(k for k, v in chars.items() if v == i) for i in ids]
    assert starts == [True, True, True, False, True, False, False]  # 我 / 爱 / 北京 / 天安门
    assert docs[0][1] == ([chars["好"]], [True]) and docs[1][0][1] == [True, False]
    en = list(tokenize_documents([["ab c"]], tokenize, language="en"))
    assert en[0][0][1] == [True] * 4


def test_words_without_pieces_add_no_word_start_flag():
    def tokenize(texts):  # "x" stands for a character that normalisation deletes: it has no pieces
        return [[ord(c) for c in text if c != "x"] for text in texts]

    # jieba keeps a lone unknown mark as a word of its own, like the Devanagari marks of the real corpus
    docs = list(tokenize_documents([["我x爱北京"]], tokenize, language="zh"))
    ids, starts = docs[0][0]
    assert ids == [ord(c) for c in "我爱北京"] and len(starts) == len(ids)


@pytest.mark.parametrize("marks", [
    "\u0941\u094d",            # Devanagari vowel sign U and virama (combining, Mn): what broke the real corpus
    "\U0001f3fb\u200d\ufe0f",  # emoji skin-tone modifier, zero-width joiner (Cf), variation selector (Mn)
    "\u0301\u00ad\u200b",      # combining acute accent, soft hyphen (Cf), zero-width space
])
def test_chinese_words_that_bert_deletes_get_no_flags(marks):
    from kbert.text.bert_tokenizer import BertTokenizer
    from kbert.pretraining_data.tokenization import tokenizer_fn

    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *"我爱北京天安门好"]
    tokenizer = BertTokenizer(vocab, lowercase=True)
    tokenize = tokenizer_fn(tokenizer)
    sentence = f"我{marks[0]}爱 {marks}北京{marks[-1]}天安门 {marks[1:]}好"
    (ids, starts), = next(iter(tokenize_documents([[sentence]], tokenize, language="zh")))
    assert len(starts) == len(ids)
    assert ids == tokenize([sentence])[0]  # the same ids as tokenizing the sentence at once
    # A skin-tone modifier (a symbol, Sk) is kept as [UNK], with its flag; everything else is deleted.
    assert [vocab[i] for i in ids if i != tokenizer.unk_token_id] == list("我爱北京天安门好")
    assert starts.count(True) == len(ids) - 3  # 北京 and 天安门 hold the only continuation flags
