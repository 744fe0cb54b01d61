"""RoBERTa's FULL-SENTENCES packing: exact packs, document separators, nothing lost, full inputs, one segment.

Token ids encode where they came from, as in test_pretraining_instances: id = 10_000 * document +
100 * sentence + position + 10.
"""

import pytest

from kbert.pretraining_data.full_sentence_packer import FullSentencePacker
from kbert.pretraining_data.instances import create_pretraining_instances
from pretraining_data import test_pretraining_instances

CLS, SEP = test_pretraining_instances.CLS, test_pretraining_instances.SEP


def make_corpus(num_docs=120, seed=0):
    """Documents of 1-8 sentences of 1-14 tokens."""
    return test_pretraining_instances.make_corpus(num_docs, seed, sentences=(1, 8), length=(1, 14))


def sentences_of(body):
    """Splits an input's body at its separators, then each part into its sentences (id // 100)."""
    parts, part = [], []
    for token in body + [SEP]:
        if token == SEP:
            parts.append(part)
            part = []
        else:
            part.append(token)
    return [[[t for t in part if t // 100 == s] for s in dict.fromkeys(t // 100 for t in part)] for part in parts]


def test_packer_exact():
    packer = FullSentencePacker(sequence_length=8, cls_id=CLS, sep_id=SEP)
    one = lambda ids: (ids, [True] * len(ids))  # noqa: E731
    assert list(packer.add([one([5, 6])])) == []
    assert list(packer.add([one([7]), one([8])])) == []  # a document after another: a separator first
    # 9 10 with its separator would make 8 tokens where 6 fit: the input is full.
    assert list(packer.add([one([9, 10])])) == [([CLS, 5, 6, SEP, 7, 8, SEP], [True] * 7)]
    long = list(range(20, 34))  # 14 tokens: two full inputs of it, the rest stays
    assert [ids for ids, _ in packer.add([one(long)])] == [[CLS, 9, 10, SEP], [CLS, *range(20, 26), SEP],
                                                           [CLS, *range(26, 32), SEP]]
    assert list(packer.finish()) == [([CLS, 32, 33, SEP], [True] * 4)] and list(packer.finish()) == []
    flags = list(FullSentencePacker(8, CLS, SEP).add([([5, 6, 7], [True, False, False])] * 3))
    assert flags == [([CLS, 5, 6, 7, 5, 6, 7, SEP], [True, True, False, False, True, False, False, True])]
    with pytest.raises(ValueError, match="sequence_length must be >= 3"):
        FullSentencePacker(2, CLS, SEP)


@pytest.mark.parametrize("dupe_factor", [1, 3])
def test_inputs_are_whole_contiguous_sentences_and_lose_nothing(dupe_factor):
    corpus = make_corpus()
    instances = list(create_pretraining_instances(corpus, sequence_length=32, cls_id=CLS, sep_id=SEP,
                                                  objective="none", packing="full-sentences",
                                                  dupe_factor=dupe_factor, seed=3, document_buffer=20))
    seen = []
    for instance in instances:
        ids = instance.token_ids
        assert len(ids) <= 32 and ids[0] == CLS and ids[-1] == SEP and ids[1] != SEP and ids[-2] != SEP
        assert instance.segment_ids == [0] * len(ids) and instance.next_sentence_label == 0
        assert len(instance.word_starts) == len(ids)
        for part in sentences_of(ids[1:-1]):
            assert len({token // 10_000 for sentence in part for token in sentence}) == 1  # a [SEP] between documents
            numbers = [sentence[0] // 100 for sentence in part]
            assert numbers == list(range(numbers[0], numbers[0] + len(numbers)))  # contiguous sentences
            seen += [token for sentence in part for token in sentence]
    # Every token of the corpus, in its sentence, exactly dupe_factor times (sentences are never cut at 32).
    assert sorted(seen) == sorted(t for doc in corpus for s in doc for t in s for _ in range(dupe_factor))
    documents = [{t // 10_000 for t in i.token_ids[1:-1] if t != SEP} for i in instances]
    assert sum(len(d) > 1 for d in documents) > len(instances) / 4  # inputs do cross documents


def test_inputs_are_filled_before_the_next_one_starts():
    corpus = make_corpus(60, seed=1)
    # One instance in the shuffle buffer: inputs come out in the order they were packed.
    instances = list(create_pretraining_instances(corpus, sequence_length=24, cls_id=CLS, sep_id=SEP,
                                                  objective="none", packing="full-sentences", seed=0,
                                                  instance_buffer=1))
    for this, following in zip(instances, instances[1:]):
        first = sentences_of(following.token_ids[1:-1])[0][0]
        separator = first[0] // 10_000 != this.token_ids[-2] // 10_000
        if following.token_ids[1] // 100 == this.token_ids[-2] // 100:
            continue  # the same sentence, longer than an input, cut in pieces
        assert len(this.token_ids) - 2 + separator + len(first) > 22  # it would not have fit
    assert sum(len(i.token_ids) for i in instances) / len(instances) > 18  # one sentence each: about 9


def test_full_sentences_take_objective_none():
    for objective in ("nsp", "sop"):
        with pytest.raises(ValueError, match="no sentence pair for objective"):
            next(create_pretraining_instances(make_corpus(3), sequence_length=16, cls_id=CLS, sep_id=SEP,
                                              objective=objective, packing="full-sentences"))
    with pytest.raises(ValueError, match="packing must be one of"):
        next(create_pretraining_instances(make_corpus(3), sequence_length=16, cls_id=CLS, sep_id=SEP,
                                          objective="none", packing="doc-sentences"))


def test_raw_text_dataset_packs_full_sentences(tmp_path, tiny_vocab_file):
    from kbert.pretraining_data.create_config import CreatePretrainingDataConfig
    from kbert.pretraining_data.text_dataset import text_pretraining_dataset
    from kbert.text import load_tokenizer

    corpus = tmp_path / "corpus.txt"
    corpus.write_text("the cat sat .\nthe dog ran .\n\na good cat !\n\nthe bad dog sat on the mat .\n" * 20)
    config = CreatePretrainingDataConfig(input=[str(corpus)], sequence_length=16, dupe_factor=1, seed=0,
                                         model_type="roberta")
    assert (config.objective, config.packing, config.masking) == ("none", "full-sentences", "dynamic")
    dataset = text_pretraining_dataset(config, load_tokenizer(tiny_vocab_file), batch_size=8)
    sep = 3
    separators = 0
    for batch in dataset.take(4):
        ids, mask = batch["token_ids"].numpy(), batch["padding_mask"].numpy()
        assert (batch["segment_ids"].numpy() == 0).all() and (batch["next_sentence_label"].numpy() == 0).all()
        assert mask.sum(1).mean() > 12  # full inputs: 14 tokens hold three of the 4-token sentences
        separators += int(((ids == sep) & mask).sum()) - len(ids)  # [SEP]s between documents
    assert separators > 10
