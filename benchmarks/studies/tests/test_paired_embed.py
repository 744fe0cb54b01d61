"""The paired embedding study (benchmarks/studies/paired_embed.py): the training file and dev set it builds from
SQuAD, and a tiny run of both sides that must agree step for step without dropout."""

import json

import pytest

from benchmarks.tests.squad_sample import SMALL

SQUAD_48 = {"data": SMALL["data"] * 24}  # 48 articles: 0-39 train, 40-47 dev


def test_training_file_is_a_seeded_shuffle_of_the_first_positive_pairs(tmp_path):
    from benchmarks.studies.paired_embed import positive_pairs, read_training_file, write_training_file

    pairs = positive_pairs(SQUAD_48, (0, 40))
    assert len(pairs) > 20 and all(question.endswith("?") for question, _ in pairs)
    for question, sentence in pairs:  # each question's positive is the sentence holding its answer
        number = int(question.split()[-1].rstrip("?")) if "city" in question else None
        answer = ["France", "Italy", "Switzerland"][number % 4] if number is not None else "100 degrees"
        assert answer in sentence
    written = write_training_file(pairs, 12, seed=1, path=tmp_path / "train.tsv")
    assert written.read_text(encoding="utf-8").splitlines()[0] == "anchor\tpositive"
    rows = read_training_file(str(written))
    assert sorted(rows) == sorted(pairs[:12]) and rows != pairs[:12]
    again = write_training_file(pairs, 12, seed=1, path=tmp_path / "again.tsv")
    assert again.read_text(encoding="utf-8") == written.read_text(encoding="utf-8")  # a seed is one order
    other = write_training_file(pairs, 12, seed=2, path=tmp_path / "other.tsv")
    assert other.read_text(encoding="utf-8") != written.read_text(encoding="utf-8")


def test_dev_set_points_each_question_at_its_sentence_among_all_of_the_dev_articles():
    from benchmarks.studies.paired_embed import dev_set, positive_pairs

    dev = dev_set(SQUAD_48)
    assert dev["sentences"] == ["Paris is in France.", "Rome is in Italy.", "Bern is in Switzerland.",
                                "Water boils at 100 degrees.", "Ice melts at 0 degrees."]
    expected = positive_pairs(SQUAD_48, (40, 48))
    assert [(q, dev["sentences"][i]) for q, i in zip(dev["questions"], dev["relevant"])] == expected


@pytest.mark.slow
def test_both_sides_agree_step_for_step_without_dropout(tmp_path, minilm, capsys):
    pytest.importorskip("torch")
    pytest.importorskip("sentence_transformers")
    from benchmarks.studies.paired_embed import METRICS, main

    squad = tmp_path / "squad.json"
    squad.write_text(json.dumps(SQUAD_48), encoding="utf-8")
    out = tmp_path / "paired.json"
    main(["--squad", str(squad), "--init", str(minilm), "--size", "8", "--batch-size", "4", "--seeds", "0",
          "--sequence-length", "32", "--dropout", "0", "--threads", "1", "--json", str(out)])
    run, = json.loads(out.read_text(encoding="utf-8"))["runs"]
    assert len(run["kbert"]["losses"]) == len(run["torch"]["losses"]) == 2
    assert run["first_loss"][0] == pytest.approx(run["first_loss"][1], abs=1e-5)
    assert run["mean_abs_loss_difference"] < 1e-5
    for scores in ("base_scores", "scores"):
        for metric in METRICS:
            assert run["kbert"][scores][metric] == pytest.approx(run["torch"][scores][metric], abs=1e-6)
    assert "| untrained |" in capsys.readouterr().out
