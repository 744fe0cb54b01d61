"""The paired fine-tuning study (benchmarks/studies/paired_finetune.py): the inputs it writes for both
frameworks, the head it hands the reference, and the columns each side reads; no training."""

import json
import pathlib

import pytest

from benchmarks.common.pair_task import build_pair_examples, write_pair_tsv
from benchmarks.tests.squad_sample import SMALL


def test_paired_inputs_shuffle_the_rows_and_draw_a_head(tmp_path):
    import numpy as np

    from benchmarks.common.hf_reference import shuffled_batches
    from benchmarks.studies.paired_finetune import write_inputs

    assert shuffled_batches(5, 2, seed=0, shuffle=False) == [[0, 1], [2, 3], [4]]
    assert sorted(sum(shuffled_batches(5, 2, seed=0), [])) == [0, 1, 2, 3, 4]
    source = tmp_path / "source.tsv"
    source.write_text("sentence\tlabel\n" + "".join(f"row {i}\t{i % 2}\n" for i in range(50)), encoding="utf-8")
    train, head = write_inputs("sst2", source, 40, seed=3, hidden=64, work=tmp_path)
    lines = train.read_text(encoding="utf-8").splitlines()
    assert lines[0] == "sentence\tlabel"
    assert sorted(lines[1:]) == sorted(f"row {i}\t{i % 2}" for i in range(40))  # the first 40, reordered
    assert lines[1:] != [f"row {i}\t{i % 2}" for i in range(40)]
    (tmp_path / "again").mkdir()
    again, _ = write_inputs("sst2", source, 40, seed=3, hidden=64, work=tmp_path / "again")
    assert again.read_text(encoding="utf-8") == train.read_text(encoding="utf-8")  # a seed is one order
    arrays = np.load(head)
    assert arrays["kernel"].shape == (64, 2) and not arrays["bias"].any()
    assert 0.016 < arrays["kernel"].std() < 0.024
    _, cut = write_inputs("sst2", source, 40, seed=3, hidden=64, work=tmp_path / "again", truncated=True)
    assert np.abs(np.load(cut)["kernel"]).max() <= 0.04 < np.abs(arrays["kernel"]).max()  # this seed has tails


def test_paired_inputs_for_tagging_keep_each_sentence_and_name_the_head_columns(tmp_path):
    import numpy as np

    from benchmarks.common.hf_reference import read_conll
    from benchmarks.studies.paired_finetune import write_inputs
    from kbert.tasks.tagging import read_tagging

    source = tmp_path / "train.txt"
    sentences = [([f"w{i}", "x"], ["B-PER" if i % 3 else "B-LOC", "O"]) for i in range(12)]
    source.write_text("-DOCSTART- -X- -X- O\n\n" + "".join(
        "".join(f"{w} NN B-NP {t}\n" for w, t in zip(*s)) + "\n" for s in sentences), encoding="utf-8")
    train, head = write_inputs("conll", source, 10, seed=1, hidden=8, work=tmp_path)
    written = read_conll(str(train), None)
    assert sorted(written) == sorted(sentences[:10]) and written != sentences[:10]
    assert read_tagging(train, tag_column="ner", tag_format=None)[0]["words"] == written[0][0]  # kbert reads it
    arrays = np.load(head)
    assert list(arrays["labels"]) == ["B-LOC", "B-PER", "O"] and arrays["kernel"].shape == (8, 3)


def test_paired_inputs_for_the_pair_task_are_the_benchmarks_files(tmp_path, monkeypatch):
    import benchmarks.common.pair_task as pair_task
    import benchmarks.studies.paired_finetune as paired

    data = {"data": SMALL["data"] * 24}  # 48 articles: 0-39 train, 40-47 dev
    squad = tmp_path / "squad.json"
    squad.write_text(json.dumps(data), encoding="utf-8")
    monkeypatch.setattr(pair_task, "PAIR_DEV_ROWS", 3)
    (tmp_path / "files").mkdir()
    train, dev = pair_task.pair_files(squad, tmp_path / "files")

    def rows(examples):
        write_pair_tsv(examples, tmp_path / "expected.tsv")
        return (tmp_path / "expected.tsv").read_text(encoding="utf-8").splitlines()

    assert train.read_text(encoding="utf-8").splitlines() == rows(build_pair_examples(data, (0, 40)))
    full_dev = rows(build_pair_examples(data, (40, 48)))
    assert len(full_dev) > 4 and dev.read_text(encoding="utf-8").splitlines() == full_dev[:4]  # header + 3
    shuffled, _ = paired.write_inputs("pairs", train, 10, seed=0, hidden=8, work=tmp_path)
    written = shuffled.read_text(encoding="utf-8").splitlines()
    assert written[0] == "question\tsentence\tlabel"
    assert sorted(written[1:]) == sorted(train.read_text(encoding="utf-8").splitlines()[1:11])
    quoted = tmp_path / "quoted.tsv"
    quoted.write_text('question\tsentence\tlabel\nWho said "no"?\tHe said "no".\t1\n', encoding="utf-8")
    copy, _ = paired.write_inputs("pairs", quoted, 10, seed=0, hidden=8, work=tmp_path)
    assert copy.read_text(encoding="utf-8") == quoted.read_text(encoding="utf-8")


def test_paired_reference_reads_the_columns_kbert_reads():
    from benchmarks.common.hf_reference import build_parser
    from benchmarks.studies.paired_finetune import TASKS, reference_task

    common = ["--init", "I", "--train", "T", "--validation", "V", "--out", "O"]
    for task, (_, _, _, columns) in TASKS.items():
        args = build_parser().parse_args([*reference_task(columns), *common])
        if columns is None:
            assert task == "conll" and not hasattr(args, "text_column")
        else:
            assert (args.text_column, args.text_pair_column, args.label_column) == (*columns, "label")


def test_paired_head_from_kbert_hands_the_reference_the_head_kbert_drew(tmp_path, monkeypatch):
    import argparse

    import benchmarks.studies.paired_finetune as paired

    init = tmp_path / "init"
    init.mkdir()
    (init / "config.json").write_text('{"hidden_size": 8}')
    harness_head = tmp_path / "harness_head.npz"
    monkeypatch.setattr(paired, "write_inputs", lambda *a, **k: (tmp_path / "train.tsv", harness_head))
    commands = []

    def run(command, **kwargs):  # each side writes its metrics where --out says
        commands.append(command)
        out = pathlib.Path(command[command.index("--out") + 1])
        out.mkdir(parents=True, exist_ok=True)
        (out / "metrics.json").write_text(json.dumps({"accuracy": 0.5, "losses": [0.7]}))

    monkeypatch.setattr(paired.subprocess, "run", run)
    args = argparse.Namespace(task="sst2", size=4, init=str(init), learning_rate=5e-5, dropout=None,
                              kbert_own=None, head_from="kbert", truncated_head=False)
    paired.run_pair(args, 0, tmp_path)
    kbert, reference = commands
    assert kbert[kbert.index("--kbert-own") + 1] == "head"
    written = kbert[kbert.index("--write-head") + 1]
    heads = [reference[i + 1] for i, flag in enumerate(reference) if flag == "--head-init"]
    assert heads == [written] and written != str(harness_head)
    with pytest.raises(SystemExit):
        paired.main(["--head-from", "kbert", "--kbert-own", "shuffle"])
