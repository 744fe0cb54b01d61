"""The studies that fine-tune a pretraining run's checkpoints (`checkpoint_downstream`) and its first phase
continued three ways (`objective_downstream`), end to end on a tiny two-phase run of a generated corpus."""

import json

import numpy as np
import pytest

import kbert
from kbert.cli.main import main as kbert_main
from tests.training.test_pretrain_cli import MODEL, write_corpus, write_topic_task


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    """A pretrain_quality-shaped run: train/, heldout/, vocab.txt, model_phase1/ (6 steps), model/ (7 steps),
    a checkpoint every 3 steps of each phase; and a labelled task in task/."""
    run = tmp_path_factory.mktemp("run")
    (run / "train").mkdir()
    (run / "heldout").mkdir()
    vocab = write_corpus(run / "train" / "corpus.txt", documents=120)
    write_corpus(run / "heldout" / "corpus.txt", documents=20, seed=1)
    (run / "vocab.txt").write_text("\n".join(vocab) + "\n")
    # 128 positions: the downstream runs keep `kbert finetune`'s default sequence length
    (run / "model.json").write_text(json.dumps({**MODEL, "max_position_embeddings": 128}))
    common = ["--vocab", str(run / "vocab.txt"), "--objective", "none", "--batch-size", "8", "--save-every-steps", "3",
              "--keep-checkpoints", "0", "--mixed-precision", "none", "--verbose", "0"]
    assert kbert_main(["pretrain", "--train", str(run / "train" / "corpus.txt"), "--config", str(run / "model.json"),
                       "--sequence-length", "16", "--steps", "6", "--out", str(run / "model_phase1"), *common]) == 0
    assert kbert_main(["pretrain", "--train", str(run / "train" / "corpus.txt"), "--init", str(run / "model_phase1"),
                       "--sequence-length", "32", "--steps", "7", "--out", str(run / "model"), *common]) == 0
    write_topic_task(run / "task", (("train", 48), ("dev", 16)))
    return run


def task_flags(run):
    return ["--downstream", str(run / "task" / "train.tsv"), str(run / "task" / "dev.tsv"), "--finetune-epochs", "1"]


def test_a_runs_checkpoints_are_numbered_over_both_phases_and_end_with_its_final_model(tiny_run):
    from benchmarks.studies.checkpoint_downstream import choose, run_checkpoints

    checkpoints = run_checkpoints(tiny_run)
    # phase 1: 3, 6; phase 2 (after phase 1's 6 steps): 9, 12; the final model at 6 + 7.
    assert [step for _, step in checkpoints] == [3, 6, 9, 12, 13]
    assert checkpoints[-1][0] == str(tiny_run / "model")
    assert [step for _, step in choose(checkpoints, 2)] == [6, 13]
    assert choose(checkpoints, 9) == checkpoints


@pytest.mark.slow
def test_checkpoint_downstream_fine_tunes_each_chosen_checkpoint_and_a_random_start(tiny_run, tmp_path):
    from benchmarks.studies.checkpoint_downstream import main

    out = tmp_path / "results.json"
    assert main(["--run", str(tiny_run), "--steps", "6", "13", "--seeds", "0", *task_flags(tiny_run),
                 "--out", str(out)]) == 0
    results = json.loads(out.read_text())
    assert results["steps"] == [0, 6, 13]
    scores = results["downstream"]["task"]["scores"]
    assert sorted(scores) == ["0", "13", "6"] and all(0.0 <= s[0] <= 1.0 for s in scores.values())
    assert results["downstream"]["task"]["differences"] == {}  # one seed: no interval
    # Step 6 is phase 1's last checkpoint: its encoder is phase 1's final model, weight for weight.
    written = kbert.load_pretrained(tiny_run / "checkpoint_finetune" / "model_6")
    phase1 = kbert.load_pretrained(tiny_run / "model_phase1")
    for a, b in zip(written.get_weights(), phase1.get_weights(), strict=True):
        np.testing.assert_array_equal(a, b)
    # and the fine-tuned model started from it, not from the final model
    final = kbert.load_pretrained(tiny_run / "model")
    assert any(not np.array_equal(a, b) for a, b in zip(written.get_weights(), final.get_weights()))
    with pytest.raises(SystemExit):  # a step with no checkpoint is refused before any work, naming the run's
        main(["--run", str(tiny_run), "--steps", "5", *task_flags(tiny_run), "--out", str(out)])


@pytest.mark.slow
def test_objective_downstream_pretrains_three_arms_alike_but_for_their_data_and_pairs_seeds(tiny_run, tmp_path):
    from benchmarks.studies.objective_downstream import ARMS, main

    recipe = tmp_path / "recipe.yaml"
    recipe.write_text("objective: none\nsequence_length: 32\nbatch_size: 8\nlearning_rate: 1.0e-3\n"
                      "mixed_precision: none\njit_compile: false\n")
    out = tmp_path / "results.json"
    assert main(["--run", str(tiny_run), "--recipe", str(recipe), "--steps", "4", "--dupe-factor", "2",
                 "--seeds", "0", "1", *task_flags(tiny_run), "--out", str(out)]) == 0
    results = json.loads(out.read_text())
    work = tiny_run / "objective_downstream"
    for name, (objective, packing) in ARMS.items():
        data = json.loads((work / name / "data" / "pretraining_data.json").read_text())
        assert (data["objective"], data["packing"]) == (objective, packing)
        history = json.loads((work / name / "model" / "history.json").read_text())
        assert history["steps"] == 4 and history["config"]["init"] == str(tiny_run / "model_phase1")
        assert results["arms"][name]["steps"] == 4 and results["arms"][name]["minutes"] > 0
    task = results["downstream"]["task"]
    assert sorted(task["scores"]) == sorted(ARMS) and all(len(s) == 2 for s in task["scores"].values())
    pair = task["differences"]["segment-pair+nsp - full-sentences"]
    differences = np.subtract(task["scores"]["segment-pair+nsp"], task["scores"]["full-sentences"])
    assert pair["n"] == 2 and pair["mean"] == pytest.approx(differences.mean())
    assert pair["low"] <= pair["mean"] <= pair["high"]


def test_the_paired_interval_is_students_t_over_seeds():
    scipy_stats = pytest.importorskip("scipy.stats")
    from benchmarks.common.seed_spread import T95, paired_interval, seeds_to_resolve

    for df, quantile in T95.items():  # the table against an independent computation
        assert quantile == pytest.approx(scipy_stats.t.ppf(0.975, df), abs=1e-3)
    a, b = [0.81, 0.79, 0.84, 0.80], [0.80, 0.80, 0.81, 0.78]
    result = paired_interval(a, b)
    low, high = scipy_stats.t.interval(0.95, 3, loc=np.mean(np.subtract(a, b)),
                                       scale=scipy_stats.sem(np.subtract(a, b)))
    assert (result["low"], result["high"]) == (pytest.approx(low, abs=1e-4), pytest.approx(high, abs=1e-4))  # 3-digit table
    # the seeds that resolve a difference the size of the spread: t(n-1) / sqrt(n) < 1 first at n = 7
    assert seeds_to_resolve(0.01, 0.01) == 7 and seeds_to_resolve(0.01, 0.0) is None
    with pytest.raises(ValueError, match="two or more pairs"):
        paired_interval([0.8], [0.7])


def test_objective_reference_scores_each_job_by_kbert_rules_on_the_seeds_every_arm_finished(tmp_path):
    from benchmarks.common.seed_spread import paired_interval
    from benchmarks.studies.objective_downstream import ARMS
    from benchmarks.studies.objective_reference import main

    work, results = tmp_path / "work", tmp_path / "results"
    (work / "data").mkdir(parents=True)
    sentences = [("EU rejects German call".split(), ["B-ORG", "O", "B-MISC", "O"]),
                 ("Peter Blackburn".split(), ["B-PER", "I-PER"])]
    (work / "data" / "conll2003_test.txt").write_text(
        "-DOCSTART- -X- -X- O\n\n" + "\n\n".join("\n".join(f"{w} NN O {t}" for w, t in zip(*s)) for s in sentences)
        + "\n", encoding="utf-8")
    accuracy = {"segment-pair+nsp": [0.80, 0.82, 0.81], "segment-pair+sop": [0.79, 0.80, 0.80],
                "full-sentences": [0.78, 0.81, 0.79]}
    for arm in ARMS:
        for seed, value in enumerate(accuracy[arm]):
            job = results / arm / "sst2" / str(seed)
            job.mkdir(parents=True)
            (job / "metrics.json").write_text(json.dumps({"accuracy": value}))
            job = results / arm / "conll2003" / str(seed)
            job.mkdir(parents=True)
            # NSP's runs find no entity; the others find the first sentence's two of three.
            tags = [["O"] * 4, ["O", "O"]] if arm == "segment-pair+nsp" else [sentences[0][1], ["O", "O"]]
            (job / "predictions.json").write_text(json.dumps(tags))
            (job / "metrics.json").write_text("{}")
    (results / "full-sentences" / "sst2" / "3").mkdir()  # a seed one arm alone finished is left out
    (results / "full-sentences" / "sst2" / "3" / "metrics.json").write_text(json.dumps({"accuracy": 0.5}))
    out = tmp_path / "scores.json"
    assert main(["score", "--work", str(work), "--results", str(results), "--out", str(out)]) == 0
    scores = json.loads(out.read_text())["downstream"]
    assert scores["sst2"]["seeds"] == 3 and scores["sst2"]["scores"]["full-sentences"] == accuracy["full-sentences"]
    pair = scores["sst2"]["differences"]["segment-pair+nsp - full-sentences"]
    expected = paired_interval(accuracy["segment-pair+nsp"], accuracy["full-sentences"])
    assert {k: pair[k] for k in expected} == pytest.approx(expected)
    # entity F1 (precision 1, recall 2/3 for the others; 0 for NSP), not word accuracy
    assert scores["conll2003"]["mean"]["segment-pair+sop"] == pytest.approx(0.8)
    assert scores["conll2003"]["mean"]["segment-pair+nsp"] == 0.0


def test_the_reference_qa_job_writes_float16_logits_that_round_its_float32_ones(tmp_path):
    pytest.importorskip("transformers")
    from benchmarks.common.hf_reference import main as reference
    from kbert.convert.checkpoints import save_pretrained
    from tests.conftest import TINY_VOCAB

    init = tmp_path / "hf"
    save_pretrained(kbert.BertEncoder.from_preset("tiny", vocab_size=len(TINY_VOCAB)), init, format="hf",
                    vocabulary=TINY_VOCAB, lowercase=True)
    rng = np.random.default_rng(0)
    windows = {}
    for split, rows in (("train", 16), ("dev", 8)):
        windows[f"{split}_token_ids"] = rng.integers(5, len(TINY_VOCAB), (rows, 16)).astype(np.int16)
        windows[f"{split}_segment_ids"] = np.repeat([[0] * 6 + [1] * 10], rows, 0).astype(np.int8)
        windows[f"{split}_padding_mask"] = np.ones((rows, 16), np.int8)
        windows[f"{split}_start_positions"] = rng.integers(6, 12, rows).astype(np.int16)
        windows[f"{split}_end_positions"] = windows[f"{split}_start_positions"] + 2
    np.savez_compressed(tmp_path / "windows.npz", **windows)  # as objective_reference ships them
    logits = {}
    for dtype in ("float32", "float16"):
        out = tmp_path / dtype
        assert reference(["qa", "--init", str(init), "--features", str(tmp_path / "windows.npz"), "--epochs", "1",
                          "--batch-size", "8", "--seed", "0", "--threads", "1", "--logits-dtype", dtype,
                          "--out", str(out)]) == 0
        with np.load(out / "logits.npz") as stored:
            logits[dtype] = {name: stored[name] for name in stored.files}
    for name in ("start_logits", "end_logits"):
        assert logits["float16"][name].dtype == np.float16 and logits["float16"][name].shape == (8, 16)
        np.testing.assert_array_equal(logits["float16"][name], logits["float32"][name].astype(np.float16))
