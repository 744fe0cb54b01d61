"""The pure-Python parts of benchmarks/finetune_quality.py: the sentence-pair task, mean/spread/goal
tables, and the reference's CoNLL reader; no training."""

import json
import pathlib
import sys

import pytest

from benchmarks.common.pair_task import build_pair_examples, sentence_spans, write_pair_tsv
from benchmarks.common.seed_spread import Spread, goal_met, quality_table, wall_time_table
from benchmarks.tests.squad_sample import SMALL

SQUAD = pathlib.Path(__file__).resolve().parents[3] / "shared" / "data" / "squad_v1.1" / "dev-v1.1.json"


def test_sentence_spans():
    text = "It rained. Then it stopped!  \"Fine,\" he said. 3 days"
    assert [text[a:b] for a, b in sentence_spans(text)] == ["It rained.", "Then it stopped!", "\"Fine,\" he said.",
                                                            "3 days"]
    assert sentence_spans("e.g. a test") == [(0, 11)]  # no capital after the dot: one sentence


def test_pair_examples_labels_and_sentences():
    examples = build_pair_examples(SMALL, (0, 1))
    # the 5 questions whose answer crosses a sentence boundary are left out
    assert len(examples) == 15
    context = SMALL["data"][0]["paragraphs"][0]["context"]
    answer_of = {f"Where is city {i}?": a for i, a in enumerate(["France", "Italy", "Switzerland", "x"] * 5)}
    for example in examples:
        answer = answer_of[example["question"]]
        assert example["sentence"] in context
        assert (answer in example["sentence"]) == (example["label"] == "1")
    assert {e["label"] for e in examples} == {"0", "1"}
    only = build_pair_examples(SMALL, (1, 2))
    assert len(only) == 1 and only[0]["sentence"] in ("Water boils at 100 degrees.", "Ice melts at 0 degrees.")


def test_pair_examples_deterministic_and_split_by_article(tmp_path):
    assert build_pair_examples(SMALL, (0, 2)) == build_pair_examples(SMALL, (0, 2))
    assert build_pair_examples(SMALL, (0, 2), seed=1) != build_pair_examples(SMALL, (0, 2))
    assert all(e["question"].startswith("When") for e in build_pair_examples(SMALL, (1, 2)))
    path = tmp_path / "pairs.tsv"
    write_pair_tsv(build_pair_examples(SMALL, (0, 1)), path)
    lines = path.read_text(encoding="utf-8").splitlines()
    assert lines[0] == "question\tsentence\tlabel" and len(lines) == 16
    assert all(len(line.split("\t")) == 3 for line in lines)


@pytest.mark.slow
@pytest.mark.skipif(not SQUAD.exists(), reason="shared SQuAD v1.1 data is absent")
def test_pair_task_on_squad_is_balanced():
    squad = json.loads(SQUAD.read_text(encoding="utf-8"))
    train, dev = build_pair_examples(squad, (0, 40)), build_pair_examples(squad, (40, 48))
    assert len(train) > 8000 and len(dev) > 1000
    assert 0.45 < sum(e["label"] == "1" for e in train) / len(train) < 0.55
    assert 0.45 < sum(e["label"] == "1" for e in dev) / len(dev) < 0.55


def test_spread_and_goal():
    spread = Spread.of([80.0, 82.0, 84.0])
    assert (spread.mean, spread.std, spread.low, spread.high, spread.n) == (82.0, 2.0, 80.0, 84.0, 3)
    assert str(spread) == "82.0 ± 2.0 (80.0–84.0)"
    assert Spread.of([70.0]).std == 0.0
    reference = Spread.of([82.0, 83.0, 84.0])  # mean 83, std 1
    assert goal_met(Spread.of([82.0, 82.5, 83.0]), reference) == (True, True)   # mean 82.5 >= 82
    assert goal_met(Spread.of([80.0, 81.0, 82.0]), reference) == (False, True)  # mean 81 < 82
    assert goal_met(Spread.of([81.0, 83.0, 85.0]), reference) == (True, False)  # std 2 > 1.5


def _runs(task: str, size: int, kbert: list[float], reference: list[float]) -> list[dict]:
    return [{"task": task, "size": size, "seed": seed, "framework": framework, "score": score,
             "wall_seconds": 10.0 if framework == "kbert" else 15.0, "first_step_seconds": 4.0,
             "train_end_seconds": 8.0,
             "train_examples_per_second": 30.0, "whole_run_examples_per_second": 20.0}
            for framework, scores in (("kbert", kbert), ("reference", reference))
            for seed, score in enumerate(scores)]


def test_quality_table_rows():
    runs = _runs("SST-2", 500, [70.0, 72.0, 74.0], [75.0, 76.0, 77.0]) + _runs("SST-2", 1000, [80.0], [80.5])
    table = quality_table(runs, {"SST-2": "accuracy"}).splitlines()
    assert len(table) == 4
    assert table[2] == ("| SST-2 | accuracy | 500 | 3 | 72.0 ± 2.0 (70.0–74.0) | 76.0 ± 1.0 (75.0–77.0) "
                        "| -4.0 | **no** | **no** |")
    assert table[3].endswith("| 1 | 80.0 ± 0.0 (80.0–80.0) | 80.5 ± 0.0 (80.5–80.5) | -0.5 | yes | yes |")


def test_wall_time_table_ratio():
    table = wall_time_table(_runs("SST-2", 2000, [70.0], [71.0])).splitlines()
    assert table[2] == ("| SST-2 | 2000 | 10.0 | 15.0 | 1.50x | yes | 20.0 / 30.0 | 20.0 / 30.0 | 4.0 / 4.0 / 2.0 "
                        "| 4.0 / 4.0 / 7.0 |")


def test_reference_conll_reader_and_progress_timing(tmp_path):
    from benchmarks.common.hf_reference import read_conll
    from benchmarks.finetune_quality import run_timed

    path = tmp_path / "train.txt"
    path.write_text("-DOCSTART- -X- -X- O\n\nEU NNP B-NP B-ORG\nrejects VBZ B-VP O\n\nPeter NNP B-NP B-PER\n",
                    encoding="utf-8")
    assert read_conll(str(path), None) == [(["EU", "rejects"], ["B-ORG", "O"]), (["Peter"], ["B-PER"])]
    assert read_conll(str(path), 1) == [(["EU", "rejects"], ["B-ORG", "O"])]
    script = "import time; print('loading'); time.sleep(0.3); print('\\x1b[1m1/2\\x1b[0m'); print('2/2')"
    timed = run_timed([sys.executable, "-c", script], tmp_path / "log.txt")
    assert 0.3 <= timed["first_step_seconds"] <= timed["train_end_seconds"] <= timed["wall_seconds"]
    assert timed["output"] == ["loading", "1/2", "2/2"]
    with pytest.raises(RuntimeError, match="failed"):
        run_timed([sys.executable, "-c", "raise SystemExit(3)"], tmp_path / "log2.txt")


@pytest.mark.parametrize("flags, message", [
    (["--tasks", "sst2,glue"], "--tasks: unknown ['glue']"),
    (["--frameworks", "kbert,torch"], "--frameworks: unknown ['torch']"),
    (["--sizes", "500", "0"], "--sizes are numbers of training examples (1 or more)"),
    (["--conll-sizes", "-1"], "--conll-sizes are numbers of training examples"),
])
def test_finetune_quality_refuses_unknown_tasks_and_empty_sizes(capsys, flags, message):
    """A typo in --tasks used to give an empty table and exit 0."""
    from benchmarks.finetune_quality import parse_args

    with pytest.raises(SystemExit) as exit_info:
        parse_args([*flags, "--init", "unused"])
    assert exit_info.value.code == 2 and message in capsys.readouterr().err


def test_kbert_phase_line_is_read_back_and_tabled():
    from benchmarks.finetune_quality import PHASES, kbert_phases, phase_table
    from kbert.training import finetune

    assert PHASES == finetune.PHASES
    seconds = {"load": 2.04, "first_step": 4.26, "train": 15.0, "evaluate": 3.95, "save": 0.61}
    output = ["Epoch 1/1", "wrote out (70.1 training examples/s, 1 replica(s))", finetune.format_phases(seconds)]
    assert kbert_phases(output) == {"load": 2.0, "first_step": 4.3, "train": 15.0, "evaluate": 4.0, "save": 0.6}
    assert kbert_phases(["no phases here"]) is None
    runs = [{"task": "SST-2", "size": 500, "framework": "kbert", "wall_seconds": wall,
             "phase_seconds": kbert_phases(output)} for wall in (30.0, 32.0)]
    runs.append({"task": "SST-2", "size": 500, "framework": "reference", "wall_seconds": 20.0, "phase_seconds": None})
    table = phase_table(runs).splitlines()
    assert table[0] == ("| task | train size | load s | first step s | train s | evaluate s | save s "
                        "| rest of the process s | wall s |")
    assert table[2] == "| SST-2 | 500 | 2.0 | 4.3 | 15.0 | 4.0 | 0.6 | 5.1 | 31.0 |"
