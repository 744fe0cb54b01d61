"""`benchmarks/studies/pretrain_quality.py` end to end on a tiny generated corpus and a tiny labelled TSV."""

import json
from types import SimpleNamespace

import pytest

import kbert
from tests.training.test_pretrain_cli import write_corpus, write_topic_task


@pytest.mark.slow
def test_pretrain_quality_writes_results_and_section(tmp_path):
    from benchmarks.studies.pretrain_quality import main, phase_budgets

    for part in range(2):
        write_corpus(tmp_path / f"corpus{part}.txt", documents=400, seed=part)  # > 2,000 lines: 5% is held out
    write_topic_task(tmp_path / "task")
    # Two phases, as the English recipe: short sequences first, then the longer ones from those weights.
    # The recipe changes the preset's heads, so the random start must take the model's architecture.
    for name, length in (("short.yaml", 16), ("recipe.yaml", 32)):
        (tmp_path / name).write_text(f"preset: tiny\nnum_attention_heads: 4\nobjective: none\n"
                                     f"sequence_length: {length}\nbatch_size: 16\n"
                                     "learning_rate: 1.0e-3\nsave_every_steps: 20\nmixed_precision: none\n")
    out = tmp_path / "out"
    code = main(["--lang", "en", "--minutes", "1", "--out", str(out), "--corpus", str(tmp_path / "corpus*.txt"),
                 "--recipe", str(tmp_path / "short.yaml"), str(tmp_path / "recipe.yaml"), "--vocab-size", "60", "--calibration-steps", "5",
                 "--downstream", str(tmp_path / "task" / "train.tsv"), str(tmp_path / "task" / "dev.tsv"),
                 "--text-column", "sentence", "--label-column", "label", "--seeds", "0",
                 "--finetune-epochs", "1"])
    assert code == 0
    results = json.loads((out / "results.json").read_text())
    # Each phase's step was timed over 5 steps; the timing's minutes came off the budget, and each phase got
    # the steps that fill its share of the rest (the time limit may stop it earlier).
    calibration = results["calibration"]
    assert calibration["steps"] == 5 and len(calibration["seconds_per_step"]) == 2 and calibration["minutes"] > 0
    recipes = [SimpleNamespace(steps=1000, max_minutes=None)] * 2  # the test's recipes have no guard
    budgets = phase_budgets(recipes, 1 - calibration["minutes"], calibration["seconds_per_step"])
    assert 0.0 < results["heldout_mlm_accuracy"] <= 1.0 and results["minutes"] > 0
    phases = results["phases"]
    assert all(2 <= phase["steps"] <= steps for phase, (_, steps) in zip(phases, budgets)), (phases, budgets)
    assert not list(out.glob("calibration_phase*"))  # the timing runs leave nothing behind
    assert [p["max_seq_length"] for p in phases] == [16, 32] and sum(p["steps"] for p in phases) == results["steps"]
    assert phases[1]["heldout_mlm_accuracy"] == results["heldout_mlm_accuracy"] and phases[0]["heldout_curve"]
    assert (out / "model_phase1" / "history.json").exists() and (out / "data_seq16").is_dir()
    assert list(results["downstream"]) == ["task"]
    task = results["downstream"]["task"]
    assert task["metric"] == "accuracy" and len(task["pretrained"]) == len(task["random"]) == 1
    assert all(0.0 <= s <= 1.0 for s in task["pretrained"] + task["random"])
    random_start = kbert.load_model(out / "finetune" / "task" / "random_0").encoder.bert_config
    assert random_start == kbert.load_pretrained(out / "model").bert_config
    assert random_start.num_attention_heads == 4  # the recipe's, not the tiny preset's 2
    assert sorted((out / "heldout").glob("*.txt"))  # the 5% split of each corpus file
    assert list((out / "model" / "heldout").glob("step_*.json"))
    section = (out / "BENCHMARKS_section.md").read_text()
    assert "Held-out masked-LM accuracy" in section and "| task | accuracy |" in section
    assert [c["step"] for c in results["heldout_curve"]] == sorted(c["step"] for c in results["heldout_curve"])
    assert all(len(losses) == 1 for losses in task["training_loss_by_epoch"]["random"])  # 1 epoch, 1 seed

    # --resume keeps the finished pretraining and fine-tuning runs and rebuilds the same results.
    (out / "model" / "checkpoints").rename(out / "checkpoints_moved")  # a retrained model would rewrite these
    assert main(["--lang", "en", "--out", str(out), "--corpus", str(tmp_path / "corpus*.txt"), "--resume",
                 "--downstream", str(tmp_path / "task" / "train.tsv"), str(tmp_path / "task" / "dev.tsv"),
                 "--text-column", "sentence", "--label-column", "label", "--seeds", "0"]) == 0
    again = json.loads((out / "results.json").read_text())
    assert not (out / "model" / "checkpoints").exists()
    assert again["downstream"] == results["downstream"] and again["steps"] == results["steps"]
    assert again["minutes"] == pytest.approx(results["minutes"]) and again["resumed"]

    # The analyses behind notebook 05 read the same run. Embryology scores every checkpoint with its own
    # loop; its overall accuracy must equal what `kbert pretrain` logged for the same step.
    from benchmarks.studies import embryology, heldout_domains, sentence_objectives

    (tmp_path / "tags.txt").write_text("-DOCSTART- -X- -X- O\n\nthe DT B-NP O\ncat NN I-NP O\neats VBZ B-VP O\n"
                                       ". . O O\n", encoding="utf-8")
    assert embryology.main(["--run", str(out), "--checkpoints", str(out / "checkpoints_moved" / "ckpt-*.weights.h5"),
                            "--classes", str(tmp_path / "tags.txt"), "--out", str(tmp_path / "embryology.json")]) == 0
    grown = json.loads((tmp_path / "embryology.json").read_text())
    logged = {c["step"]: c["mlm_accuracy"] for c in results["heldout_curve"]}
    common = [(step, acc) for step, acc in zip(grown["steps"], grown["overall_accuracy"]) if step in logged]
    assert common and all(acc == pytest.approx(logged[step], abs=1e-6) for step, acc in common)
    assert {cell["class"] for cell in grown["cells"].values()} <= {"determiner", "noun", "verb", "punctuation"}

    assert heldout_domains.main(["--run", str(out), "--text", f"other={tmp_path / 'corpus1.txt'}",
                                 "--out", str(tmp_path / "domains.json")]) == 0
    domains = json.loads((tmp_path / "domains.json").read_text())
    assert domains["accuracy"]["corpus_heldout"] == pytest.approx(results["heldout_mlm_accuracy"], abs=1e-6)
    assert 0.0 <= domains["accuracy"]["other"] <= 1.0

    assert sentence_objectives.main(["--run", str(out), "--steps", "4", "--evaluations", "2", "--batch-size", "8",
                                     "--max-seq-length", "32", "--dropout", "0", "--out", str(tmp_path / "nsp_sop.json")]) == 0
    curves = json.loads((tmp_path / "nsp_sop.json").read_text())
    assert [curves[o]["steps"] for o in ("nsp", "sop")] == [[2, 4], [2, 4]]
    assert all(0.0 <= a <= 1.0 for o in ("nsp", "sop") for a in curves[o]["sentence_accuracy"])

    # The labelled-data curve: the same fine-tuning at two training sizes. At 64 rows (all of them) with the
    # main run's seed and epochs it repeats that run; at 32 rows it trains one step an epoch instead of two.
    from benchmarks.studies import labelled_data_curve

    assert labelled_data_curve.main(["--run", str(out), "--downstream", str(tmp_path / "task" / "train.tsv"),
                                     str(tmp_path / "task" / "dev.tsv"), "--sizes", "32", "64", "--seeds", "0",
                                     "--finetune-epochs", "1", "--out", str(tmp_path / "curve.json")]) == 0
    by_size = json.loads((tmp_path / "curve.json").read_text())["tasks"]["task"]["by_size"]
    assert list(by_size) == ["32", "64"]
    assert by_size["64"]["pretrained"] == pytest.approx(task["pretrained"], abs=1e-6)
    assert by_size["64"]["random"] == pytest.approx(task["random"], abs=1e-6)
    steps = {size: json.loads((out / "labelled_curve" / size / "task" / "pretrained_0" / "history.json").read_text())
             ["steps_per_epoch"] for size in by_size}
    assert steps == {"32": 1, "64": 2}


@pytest.mark.parametrize("flags, message", [
    (["--minutes", "0"], "--minutes must be positive"),
    (["--heldout-text", "{tmp}/missing.txt"], "--heldout-text: no file matches"),
    (["--heldout-text", "{tmp}/empty.txt"], "empty.txt holds no text"),
    (["--downstream", "{tmp}/missing.tsv", "{tmp}/dev.tsv"], "missing.tsv: no such file"),
    (["--downstream", "{tmp}/train.tsv", "{tmp}/dev.tsv", "--text-column", "text"], "no column 'text'"),
    (["--downstream", "{tmp}/train.tsv", "{tmp}/odd_labels.tsv"], "label '2' is not one of"),
])
def test_pretrain_quality_refuses_bad_arguments_before_any_work(tmp_path, capsys, flags, message):
    """A wrong flag, path, column or label stops the benchmark at once, not after an hour of pretraining."""
    from benchmarks.studies.pretrain_quality import main

    (tmp_path / "train.tsv").write_text("sentence\tlabel\ngood film\t1\nbad film\t0\n", encoding="utf-8")
    (tmp_path / "dev.tsv").write_text("sentence\tlabel\nfine\t1\n", encoding="utf-8")
    (tmp_path / "odd_labels.tsv").write_text("sentence\tlabel\nfine\t2\n", encoding="utf-8")
    (tmp_path / "empty.txt").write_text("\n \n", encoding="utf-8")
    out = tmp_path / "out"
    with pytest.raises(SystemExit) as exit_info:
        main(["--out", str(out), *(flag.format(tmp=tmp_path) for flag in flags)])
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err
    assert not out.exists()  # nothing built


def test_labelled_data_curve_refuses_bad_sizes_and_labels_before_any_work(tmp_path, capsys):
    from benchmarks.studies.labelled_data_curve import main

    run = tmp_path / "run"
    (run / "model").mkdir(parents=True)
    (run / "vocab.txt").write_text("[PAD]\n[UNK]\n[CLS]\n[SEP]\n", encoding="utf-8")
    (tmp_path / "train.tsv").write_text("sentence\tlabel\ngood film\t1\nbad film\t0\n", encoding="utf-8")
    (tmp_path / "dev.tsv").write_text("sentence\tlabel\nfine\t0\n", encoding="utf-8")
    task = ["--downstream", str(tmp_path / "train.tsv"), str(tmp_path / "dev.tsv")]
    for sizes, message in ((["0", "2"], "--sizes are numbers of training rows"),
                           (["1"], "label '0' is not one of the model's labels ['1']")):
        with pytest.raises(SystemExit) as exit_info:
            main(["--run", str(run), *task, "--sizes", *sizes, "--out", str(tmp_path / "curve.json")])
        assert exit_info.value.code == 2 and message in capsys.readouterr().err
    assert not (run / "labelled_curve").exists() and not (tmp_path / "curve.json").exists()
