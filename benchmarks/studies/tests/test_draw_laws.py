"""benchmarks/studies/draw_laws.py: each arm trains on the draws it names, and the report reads the arms back."""

import json

import numpy as np
import pytest

pytest.importorskip("transformers")
from safetensors.numpy import save_file  # noqa: E402
from transformers import BertConfig, BertForSequenceClassification  # noqa: E402

from benchmarks.studies.draw_laws import main  # noqa: E402

ROWS, DEV_ROWS, HIDDEN = 40, 12, 8


def _tiny_pack(path, same_heads: bool):
    """A 1-layer BERT and two seeds of draws: orders differ between the programs; heads too, unless
    `same_heads`."""
    config = BertConfig(vocab_size=20, hidden_size=HIDDEN, num_hidden_layers=1, num_attention_heads=2,
                        intermediate_size=16, max_position_embeddings=16)
    model = BertForSequenceClassification(config)
    weights = {k: v.numpy() for k, v in model.state_dict().items()
               if not k.startswith("classifier") and not k.endswith(("position_ids", "token_type_ids"))}
    save_file(weights, str(path / "model.safetensors"))
    (path / "config.json").write_text(json.dumps(config.to_dict()))
    rng = np.random.default_rng(0)
    arrays = {}
    for part, rows in (("train", ROWS), ("dev", DEV_ROWS)):
        lengths = rng.integers(3, 10, rows)
        ids = rng.integers(1, 20, (rows, 10))
        ids[np.arange(10)[None, :] >= lengths[:, None]] = 0
        arrays.update({f"{part}_ids": ids.astype(np.int32), f"{part}_lengths": lengths.astype(np.int32),
                       f"{part}_labels": rng.integers(0, 2, rows).astype(np.int32)})
    heads = [rng.normal(0, 0.02, (2, HIDDEN, 2)).astype(np.float32) for _ in range(2)]
    np.savez(path / "draws.npz", seeds=np.array([0, 1]), labels=np.array(["0", "1"]), **arrays,
             reference_order=np.stack([rng.permutation(ROWS) for _ in range(2)]),
             kbert_order=np.stack([rng.permutation(ROWS) for _ in range(2)]),
             reference_head=heads[0], kbert_head=heads[0] if same_heads else heads[1])


def _runs(path):
    return {(r["seed"], r["arm"]): r for r in map(json.loads, path.read_text().splitlines())}


def test_arms_train_on_the_order_and_head_they_name(tmp_path):
    _tiny_pack(tmp_path, same_heads=True)
    out = tmp_path / "arms.jsonl"
    main(["train", "--pack", str(tmp_path), "--out", str(out)])
    runs = _runs(out)
    assert len(runs) == 8
    for seed in (0, 1):
        # Heads are the same, so only the order tells the arms apart: kbert = kbert-order, reference = kbert-head.
        for same in (("kbert", "kbert-order"), ("reference", "kbert-head")):
            first, second = (runs[seed, arm] for arm in same)
            assert first["first_loss"] == second["first_loss"] and first["score"] == second["score"]
        assert runs[seed, "kbert"]["first_loss"] != runs[seed, "reference"]["first_loss"]


def test_heads_move_the_first_loss_and_the_report_lists_every_arm(tmp_path, capsys):
    _tiny_pack(tmp_path, same_heads=False)
    out = tmp_path / "arms.jsonl"
    main(["train", "--pack", str(tmp_path), "--out", str(out), "--dropout", "0"])
    runs = _runs(out)
    # The same order, another head: the first batch's loss differs; the same draws: it repeats exactly.
    assert runs[0, "kbert-head"]["first_loss"] != runs[0, "reference"]["first_loss"]
    assert runs[0, "kbert-order"]["first_loss"] != runs[0, "kbert"]["first_loss"]
    capsys.readouterr()
    main(["report", str(out), "--draws", "200"])
    table = capsys.readouterr().out.splitlines()
    assert [line.split(" (")[0].strip("| ") for line in table[2:]] == ["reference", "kbert", "kbert-order",
                                                                       "kbert-head"]
    scores = [runs[s, "kbert"]["score"] for s in (0, 1)]
    assert f"{np.mean(scores):.2f} ± {np.std(scores, ddof=1):.2f}" in table[3]


def test_report_sets_each_programs_own_runs_against_the_loop_on_the_same_draws(tmp_path, capsys):
    arms = tmp_path / "arms.jsonl"
    loop = {("kbert", 0): 50.0, ("kbert", 1): 60.0, ("reference", 0): 55.0, ("reference", 1): 57.0}
    arms.write_text("".join(json.dumps({"seed": s, "arm": a, "score": v}) + "\n" for (a, s), v in loop.items()))
    # kbert's own runs: the loop's scores plus one point; the reference's: in the other order.
    own = [{"task": "SST-2", "size": 500, "seed": s, "framework": "kbert", "score": loop["kbert", s] + 1}
           for s in (0, 1)]
    own += [{"task": "SST-2", "size": 500, "seed": s, "framework": "reference", "score": loop["reference", 1 - s]}
            for s in (0, 1)]
    own.append({"task": "SST-2", "size": 1000, "seed": 0, "framework": "kbert", "score": 0.0})  # another size
    (tmp_path / "runs.json").write_text(json.dumps(own))
    main(["report", str(arms), "--finetune-quality", str(tmp_path / "runs.json"), "--draws", "50"])
    table = capsys.readouterr().out.splitlines()
    assert "| kbert | 2 | 56.00 | 55.00 | +1.00 ± 0.00 | 1.00 |" in table
    assert "| reference | 2 | 56.00 | 56.00 | +0.00 ± 2.83 | -1.00 |" in table
