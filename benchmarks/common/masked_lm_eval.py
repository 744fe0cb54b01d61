"""Held-out masked-LM scoring, shared by the studies: of a finished `benchmarks/studies/pretrain_quality.py`
run (kbert), and of transformers' `BertForMaskedLM` at the masked positions (`masked_lm_logits`).

A run directory holds `data/` (the create-pretraining-data output, whose settings say how text is cut and
masked), `model/` (the final weights and vocabulary) and `model/checkpoints/`. Text is masked exactly as
`kbert pretrain --heldout-text` masks it (`kbert.pretraining_data.heldout`, fixed seed), so scores here
and in `model/heldout/step_*.json` are the same measure.
"""

from __future__ import annotations

import pathlib


def heldout_batches(run: pathlib.Path, files: list[str], max_instances: int = 2048, batch_size: int = 128,
                    data: pathlib.Path | None = None) -> list:
    """`files` cut and masked with the settings of `data` (default: the run's `data/`), as a list of numpy
    feature batches."""
    from kbert.pretraining_data import CreatePretrainingDataConfig
    from kbert.pretraining_data.heldout import heldout_from_text
    from kbert.pretraining_data.shards import read_pretraining_metadata
    from kbert.text import load_tokenizer

    data = read_pretraining_metadata(data or run / "data")
    config = CreatePretrainingDataConfig(
        input=files, sequence_length=data["sequence_length"], max_predictions_per_seq=data["max_predictions_per_seq"],
        masked_lm_prob=data["masked_lm_prob"], objective="none", whole_word_masking=data["whole_word_masking"],
        language=data["language"], layout=data["layout"], encoding_errors="replace")
    tokenizer = load_tokenizer(run / "model")
    return list(heldout_from_text(config, tokenizer, batch_size, max_instances).as_numpy_iterator())


def masked_lm_hits(model, features: dict):
    """Per masked position: 1 where the model's top token is the original one (weight-0 slots count 0)."""
    import numpy as np

    logits = model.predict_on_batch(features)["mlm_logits"]
    return (np.argmax(logits, axis=-1) == features["masked_ids"]) * (features["masked_weights"] > 0)


def accuracy_by_input(model, batches: list, mask_id: int) -> dict:
    """Masked-LM accuracy (`overall`, the `mlm_accuracy` that `kbert pretrain` reports), split by what the
    input showed at the target (BERT's 80/10/10): "[MASK]", the original token ("kept") or a "random"
    one, with counts, and how many distinct tokens are guessed at [MASK].

    A model that only copies its input and guesses frequent tokens scores about 0.1 + 0.8 x (unigram
    rate) overall; its [MASK] accuracy and the number of distinct guesses tell it apart from one that
    reads the context.
    """
    import numpy as np

    right = {"[MASK]": 0, "kept": 0, "random": 0}
    total = dict.fromkeys(right, 0)
    guessed: set[int] = set()
    for features in batches:
        guess = np.argmax(model.predict_on_batch(features)["mlm_logits"], axis=-1)
        shown = np.take_along_axis(features["token_ids"], features["masked_positions"], axis=1)
        scored = features["masked_weights"] > 0
        kinds = {"[MASK]": shown == mask_id, "kept": (shown == features["masked_ids"]) & (shown != mask_id)}
        kinds["random"] = ~kinds["[MASK]"] & ~kinds["kept"]
        for kind, where in kinds.items():
            where &= scored
            right[kind] += int((guess[where] == features["masked_ids"][where]).sum())
            total[kind] += int(where.sum())
        guessed.update(guess[kinds["[MASK]"] & scored].tolist())
    return {"overall": sum(right.values()) / max(sum(total.values()), 1),
            "accuracy": {k: right[k] / max(total[k], 1) for k in right}, "targets": total,
            "distinct_guesses_at_mask": len(guessed)}


def masked_lm_logits(model, token_ids, padding_mask, masked_positions, segment_ids=None):
    """`BertForMaskedLM`'s logits at the masked positions only (the same numbers as at every position)."""
    import torch

    segment_ids = torch.zeros_like(token_ids) if segment_ids is None else segment_ids
    hidden = model.bert(input_ids=token_ids, attention_mask=padding_mask.long(),
                        token_type_ids=segment_ids).last_hidden_state
    gathered = torch.gather(hidden, 1, masked_positions[:, :, None].expand(-1, -1, hidden.shape[-1]))
    return model.cls(gathered)
