"""`kbert create-pretraining-data` end to end on a tiny corpus, and its errors on bad input."""

import json
from collections import Counter

import pytest

from conftest import TINY_VOCAB
from kbert.cli.main import main
from kbert.pretraining_data.dynamic_masking import pretraining_feature_spec
from kbert.pretraining_data.tfrecords import load_pretraining_dataset

CORPUS = ("the cat sat on the mat .\nthe dog ran !\na good cat sat .\n\n"
          "the bad dog ran on a mat .\nun cat sat .\n\na dog !\nthe cats ran .\nthe mat sat ?\n")


@pytest.fixture
def corpus(tmp_path):
    path = tmp_path / "corpus" / "part1.txt"
    path.parent.mkdir()
    path.write_text(CORPUS, encoding="utf-8")
    return path


def run(args):
    return main(["create-pretraining-data", *map(str, args)])


def test_end_to_end_static(tmp_path, corpus, tiny_vocab_file, capsys):
    out = tmp_path / "out"
    code = run(["--input", str(corpus.parent / "*.txt"), "--vocab", tiny_vocab_file, "--out", out,
                "--sequence-length", 16, "--dupe-factor", 5, "--num-shards", 2, "--whole-word-masking", "--seed", 1])
    assert code == 0 and "static-masked instances" in capsys.readouterr().out
    metadata = json.loads((out / "pretraining_data.json").read_text())
    assert metadata["max_predictions_per_seq"] == 2  # round(16 * 0.15)
    assert metadata["objective"] == "nsp" and metadata["whole_word_masking"] is True and metadata["lowercase"]
    assert (out / "vocab.txt").read_text() == tiny_vocab_file.read_text()
    vocab = tiny_vocab_file.read_text().split()
    dataset = load_pretraining_dataset(out, 4, shuffle=False, drop_remainder=False)
    assert dataset.element_spec == pretraining_feature_spec(16, 2, (None,))
    total = 0
    words = set(CORPUS.split())
    for batch in dataset:
        b = {k: v.numpy() for k, v in batch.items()}
        for i in range(len(b["token_ids"])):
            ids = b["token_ids"][i].copy()
            real = b["masked_weights"][i] > 0
            ids[b["masked_positions"][i][real]] = b["masked_ids"][i][real]  # undo the masking
            tokens = [vocab[t] for t in ids[b["padding_mask"][i]]]
            assert tokens[0] == "[CLS]" and tokens[-1] == "[SEP]" and tokens.count("[SEP]") == 2
            text = " ".join(tokens[1:-1]).replace(" ##", "").replace("[SEP]", "").split()
            assert set(text) <= words | {"cat", "un"}  # "cats" -> cat ##s; "un" stays
            first = tokens.index("[SEP]")
            segments = b["segment_ids"][i]
            assert segments[: first + 1].sum() == 0 and (segments[first + 1: len(tokens)] == 1).all()
            total += 1
    assert total == metadata["num_instances"] > 10


def test_dynamic_output_has_the_same_spec(tmp_path, corpus, tiny_vocab_file):
    out = tmp_path / "dyn"
    assert run(["--input", corpus, "--vocab", tiny_vocab_file, "--out", out, "--sequence-length", 16,
                "--dupe-factor", 2, "--masking", "dynamic", "--objective", "sop"]) == 0
    dataset = load_pretraining_dataset(out, 2)
    assert dataset.element_spec == pretraining_feature_spec(16, 2, (2,))
    assert next(iter(dataset))["masked_weights"].numpy().sum() > 0


def test_chinese_whole_word_masking(tmp_path):
    vocab = tmp_path / "vocab.txt"
    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    vocab.write_text("\n".join([*specials, *"我爱北京天安门。你好"]) + "\n")
    corpus = tmp_path / "zh.txt"
    corpus.write_text("我爱北京天安门。你好。\n我爱北京。\n", encoding="utf-8")
    out = tmp_path / "zh"
    assert run(["--input", corpus, "--vocab", vocab, "--out", out, "--sequence-length", 24, "--layout",
                "documents", "--language", "zh", "--whole-word-masking", "--masked-lm-prob", 0.5,
                "--dupe-factor", 20, "--objective", "none", "--masking", "static"]) == 0
    tokens = vocab.read_text().split()
    whole = 0
    for batch in load_pretraining_dataset(out, 1, shuffle=False, drop_remainder=False):
        positions = set(batch["masked_positions"].numpy()[0][batch["masked_weights"].numpy()[0] > 0].tolist())
        ids = batch["token_ids"].numpy()[0]
        ids[list(positions)] = batch["masked_ids"].numpy()[0][: len(positions)]
        text = [tokens[i] for i in ids if i > 0]
        for word in ("北京", "天安门"):  # jieba words: masked all together or not at all
            for start in [j for j in range(len(text) - len(word) + 1) if "".join(text[j:j + len(word)]) == word]:
                span = set(range(start, start + len(word)))
                assert span <= positions or span.isdisjoint(positions)
                whole += span <= positions
    assert whole > 0


def test_bad_input_named(tmp_path, corpus, tiny_vocab_file, capsys):
    no_mask = tmp_path / "nomask.txt"
    no_mask.write_text(tiny_vocab_file.read_text().replace("[MASK]\n", ""))
    assert run(["--input", corpus, "--vocab", no_mask, "--out", tmp_path / "x"]) == 1
    assert "no [MASK] token" in capsys.readouterr().err
    empty = tmp_path / "empty.txt"
    empty.write_text("\n\n")
    assert run(["--input", empty, "--vocab", tiny_vocab_file, "--out", tmp_path / "y"]) == 1
    assert "no pretraining instance" in capsys.readouterr().err
    assert run(["--input", tmp_path / "missing*.txt", "--vocab", tiny_vocab_file, "--out", tmp_path / "z"]) == 1
    assert "missing*.txt" in capsys.readouterr().err


def test_library_function_records_every_setting(tmp_path, corpus, tiny_vocab_file):
    from kbert.pretraining_data import CreatePretrainingDataConfig, create_pretraining_data

    config = CreatePretrainingDataConfig(input=[str(corpus)], vocab=str(tiny_vocab_file), out=str(tmp_path / "lib"),
                                         sequence_length=16, dupe_factor=3, objective="sop", masking="dynamic")
    metadata = create_pretraining_data(config)
    written = json.loads((tmp_path / "lib" / "pretraining_data.json").read_text())
    assert metadata["num_instances"] == written["num_instances"] > 5 and metadata["seconds"] > 0
    assert written["objective"] == "sop" and written["masking"] == "dynamic" and written["dupe_factor"] == 3
    assert written["encoding_errors"] == "replace" and written["input"] == [str(corpus)]
    with pytest.raises(ValueError, match="layout"):
        create_pretraining_data(CreatePretrainingDataConfig(input=[str(corpus)], vocab=str(tiny_vocab_file),
                                                            out=str(tmp_path / "bad"), layout="pages"))


def test_latin1_input_follows_the_encoding_policy(tmp_path, tiny_vocab_file, capsys):
    from kbert.text.text_files import CorpusEncodingWarning

    latin1 = tmp_path / "latin1.txt"
    latin1.write_bytes(CORPUS.replace("good", "g\u00f6\u00f6d").encode("latin-1"))
    assert run(["--input", latin1, "--vocab", tiny_vocab_file, "--out", tmp_path / "strict",
                "--encoding-errors", "strict"]) == 1
    assert "latin1.txt:3: not valid UTF-8" in capsys.readouterr().err
    with pytest.warns(CorpusEncodingWarning, match=r"latin1\.txt: 1 line\(s\)"):
        assert run(["--input", latin1, "--vocab", tiny_vocab_file, "--out", tmp_path / "ok",
                    "--sequence-length", 16]) == 0


def test_chinese_words_that_normalisation_deletes_do_not_break_whole_word_masking(tmp_path):
    # The shape of the shared Chinese corpus's crash: jieba returns lone combining marks as words.
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *"我爱北京天安门。你好"]) + "\n")
    corpus = tmp_path / "zh.txt"
    corpus.write_text("我爱\u0941北京\u094d天安门。\U0001f44d\U0001f3fb你好\u200d。\n" * 30, encoding="utf-8")
    assert run(["--input", corpus, "--vocab", vocab, "--out", tmp_path / "zh", "--sequence-length", 12,
                "--layout", "documents", "--language", "zh", "--whole-word-masking", "--dupe-factor", 2]) == 0
    assert json.loads((tmp_path / "zh" / "pretraining_data.json").read_text())["num_instances"] > 10


def test_old_metadata_still_works(tmp_path, corpus, tiny_vocab_file):
    out = tmp_path / "old"
    assert run(["--input", corpus, "--vocab", tiny_vocab_file, "--out", out, "--sequence-length", 16,
                "--dupe-factor", 2]) == 0
    metadata_file = out / "pretraining_data.json"
    metadata = json.loads(metadata_file.read_text())
    assert metadata["sequence_length"] == 16 and "max_seq_length" not in metadata
    # A directory written by kbert 0.1 records max_seq_length: it is still read.
    metadata["max_seq_length"] = metadata.pop("sequence_length")
    metadata_file.write_text(json.dumps(metadata))
    assert load_pretraining_dataset(out, 2).element_spec == pretraining_feature_spec(16, 2, (2,))


def test_model_type_roberta_packs_full_sentences_with_dynamic_masks(tmp_path, corpus, tiny_vocab_file, capsys):
    out = tmp_path / "roberta"
    assert run(["--input", corpus, "--vocab", tiny_vocab_file, "--out", out, "--sequence-length", 16,
                "--dupe-factor", 2, "--model-type", "roberta"]) == 0
    assert "dynamic-masked instances (none, seq 16)" in capsys.readouterr().out
    metadata = json.loads((out / "pretraining_data.json").read_text())
    assert (metadata["model_type"], metadata["objective"], metadata["packing"], metadata["masking"],
            metadata["ngram"], metadata["whole_word_masking"]) == ("roberta", "none", "full-sentences", "dynamic",
                                                                   1, False)
    sep = TINY_VOCAB.index("[SEP]")
    inside, inputs = 0, []
    for batch in load_pretraining_dataset(out, 4, shuffle=False, drop_remainder=False, seed=0):
        ids, mask = batch["token_ids"].numpy(), batch["padding_mask"].numpy()
        assert (batch["segment_ids"].numpy() == 0).all() and (batch["next_sentence_label"].numpy() == 0).all()
        assert (ids[:, 0] == TINY_VOCAB.index("[CLS]")).all()
        inside += int(((ids[:, 1:] == sep) & mask[:, 1:]).sum()) - len(ids)  # separators between documents
        weights = batch["masked_weights"].numpy() > 0
        for row, positions, originals, real in zip(ids, batch["masked_positions"].numpy(),
                                                   batch["masked_ids"].numpy(), weights):
            row[positions[real]] = originals[real]  # the unmasked input
            inputs.append(tuple(row.tolist()))
    assert inside > 0
    # 40 tokens in 3 documents fill a few inputs of at most 14; each is written twice (--dupe-factor 2).
    assert len(inputs) == metadata["num_instances"] and set(Counter(inputs).values()) == {2}
    # `--layout full-sentences` (RoBERTa's name for the format) is the sentences layout packed as full sentences.
    again = tmp_path / "layout"
    assert run(["--input", corpus, "--vocab", tiny_vocab_file, "--out", again, "--sequence-length", 16,
                "--dupe-factor", 2, "--layout", "full-sentences", "--masking", "dynamic", "--objective", "none"]) == 0
    assert json.loads((again / "pretraining_data.json").read_text())["packing"] == "full-sentences"


def test_model_type_albert_defaults_and_given_flags(tmp_path, corpus, tiny_vocab_file):
    def recorded(*flags):
        out = tmp_path / f"albert{len(flags)}"
        assert run(["--input", corpus, "--vocab", tiny_vocab_file, "--out", out, "--sequence-length", 16,
                    "--dupe-factor", 1, "--model-type", "albert", *flags]) == 0
        metadata = json.loads((out / "pretraining_data.json").read_text())
        return metadata["objective"], metadata["packing"], metadata["ngram"], metadata["whole_word_masking"]

    assert recorded() == ("sop", "segment-pair", 3, True)
    assert recorded("--ngram", 2, "--objective", "nsp", "--no-whole-word-masking") == ("nsp", "segment-pair", 2,
                                                                                         False)


def test_full_sentences_with_a_sentence_objective_is_named(tmp_path, corpus, tiny_vocab_file, capsys):
    assert run(["--input", corpus, "--vocab", tiny_vocab_file, "--out", tmp_path / "x", "--packing",
                "full-sentences", "--objective", "sop"]) == 1
    assert "no sentence pair for objective 'sop'; use objective 'none'" in capsys.readouterr().err
    assert not (tmp_path / "x").exists()
    assert run(["--input", corpus, "--vocab", tiny_vocab_file, "--out", tmp_path / "y", "--ngram", 0]) == 1
    assert "ngram must be >= 1" in capsys.readouterr().err


def test_a_tokenizer_directory_travels_with_the_data(tmp_path, corpus, tiny_vocab_file, capsys):
    from kbert.text import load_tokenizer

    tokenizer_dir = tmp_path / "tokenizer"
    load_tokenizer(tiny_vocab_file).save_vocabulary(tokenizer_dir)  # vocab.txt and tokenizer_config.json
    out = tmp_path / "from_dir"
    assert run(["--input", corpus, "--vocab", tokenizer_dir, "--out", out, "--sequence-length", 16,
                "--dupe-factor", 1, "--masking", "dynamic", "--model-type", "albert"]) == 0
    assert sorted(p.name for p in out.iterdir()) == ["part-00000-of-00001.tfrecord", "pretraining_data.json",
                                                     "tokenizer_config.json", "vocab.txt"]
    batch = next(iter(load_pretraining_dataset(out, 2, seed=0)))  # dynamic 3-gram masks from the copied tokenizer
    assert batch["masked_weights"].numpy().sum() > 0
    (tmp_path / "no_tokenizer").mkdir()
    assert run(["--input", corpus, "--vocab", tmp_path / "no_tokenizer", "--out", tmp_path / "z"]) == 1
    assert "no tokenizer file (" in capsys.readouterr().err
