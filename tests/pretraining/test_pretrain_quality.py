"""`benchmarks/pretrain_quality.py` end to end on a tiny generated corpus and a tiny labelled TSV."""

import json
import random

import pytest

from pretraining.test_pretrain_cli import TOPICS, write_corpus


@pytest.mark.slow
def test_pretrain_quality_writes_results_and_section(tmp_path):
    from benchmarks.pretrain_quality import main

    for part in range(2):
        write_corpus(tmp_path / f"corpus{part}.txt", documents=400, seed=part)  # > 2,000 lines: 5% is held out
    rng = random.Random(0)
    for split, rows in (("train", 64), ("dev", 32)):
        lines = ["sentence\tlabel"]
        for _ in range(rows):
            label = rng.randrange(2)
            nouns, verbs = TOPICS[label]
            lines.append(f"the {rng.choice(nouns)} {rng.choice(verbs)} the {rng.choice(nouns)} .\t{label}")
        (tmp_path / "task").mkdir(exist_ok=True)
        (tmp_path / "task" / f"{split}.tsv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (tmp_path / "recipe.yaml").write_text("preset: tiny\nobjective: none\nmax_seq_length: 32\nbatch_size: 16\n"
                                          "learning_rate: 1.0e-3\nsave_every_steps: 20\n")
    out = tmp_path / "out"
    code = main(["--lang", "en", "--minutes", "1", "--out", str(out), "--corpus", str(tmp_path / "corpus*.txt"),
                 "--recipe", str(tmp_path / "recipe.yaml"), "--vocab-size", "60", "--seconds-per-step", "1",
                 "--downstream", str(tmp_path / "task" / "train.tsv"), str(tmp_path / "task" / "dev.tsv"),
                 "--text-column", "sentence", "--label-column", "label", "--seeds", "0",
                 "--finetune-epochs", "1"])
    assert code == 0
    results = json.loads((out / "results.json").read_text())
    # The step budget is 60 (1 minute at 1 s a step); the time limit may stop it earlier on a busy machine.
    assert 0.0 < results["heldout_mlm_accuracy"] <= 1.0 and 2 <= results["steps"] <= 60 and results["minutes"] > 0
    assert list(results["downstream"]) == ["task"]
    task = results["downstream"]["task"]
    assert task["metric"] == "accuracy" and len(task["pretrained"]) == len(task["random"]) == 1
    assert all(0.0 <= s <= 1.0 for s in task["pretrained"] + task["random"])
    assert sorted((out / "heldout").glob("*.txt"))  # the 5% split of each corpus file
    assert list((out / "model" / "heldout").glob("step_*.json"))
    section = (out / "BENCHMARKS_section.md").read_text()
    assert "Held-out masked-LM accuracy" in section and "| task | accuracy |" in section
