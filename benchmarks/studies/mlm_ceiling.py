"""How far can a corpus take a masked LM? Hugging Face's PyTorch BERT on kbert's own instances, on any device.

kbert's recipes pretrain for an hour on two CPU cores. Whether a held-out masked-LM goal is out of reach
because of that hour, the model's size or the text itself cannot be told from the CPU alone. This script
answers it on whatever torch device there is, with an implementation independent of kbert's:

1. `export` (needs kbert and TensorFlow) writes a `create-pretraining-data` directory (dynamic masking) and
   the held-out set that `kbert pretrain --heldout-text` scores into one `.npz`: the unmasked instances,
   the vocabulary's special and continuation flags, and the held-out batches exactly as kbert masks them
   (fixed seed), so both sides are asked the same held-out questions.
2. `train` (needs only torch and transformers) trains `BertForMaskedLM` in phases from one or more such
   files: masks drawn afresh for every batch by `mask_whole_words`, a port of
   `kbert.pretraining_data.DynamicMasker`'s rule; `torch.optim.AdamW` with BERT's settings (eps 1e-6,
   no decay on biases and LayerNorm, clipping at 1.0) and kbert's warmup/linear-decay schedule; the
   masked-LM head at the masked positions only. It scores the held-out set every `--eval-every` steps and
   rewrites its JSON after each score, so a run stopped by `--max-minutes` keeps its curve.

    python -m benchmarks.studies.mlm_ceiling export --data runs/zh/data128 --heldout-text runs/zh/heldout.txt \\
        --out runs/zh/zh128.npz
    python -m benchmarks.studies.mlm_ceiling train --phase runs/zh/zh32.npz:7118:128:1e-3:500 \\
        --phase runs/zh/zh128.npz:13728:64:1e-3:300 --layers 2 --hidden 128 --heads 2 --out curve.json

A phase is `FILE:STEPS:BATCH:LEARNING_RATE:WARMUP`, or with `MINUTESm` for STEPS (`4.5m`) a phase whose
linear decay runs over its wall time instead of a step count, for devices whose speed is not known ahead.
Each phase starts a new optimizer and schedule from the weights of the one before, as `kbert pretrain
--init` does. The held-out set scored is the last phase's file's.
"""

from __future__ import annotations

import argparse
import json
import pathlib
import time
from typing import Any

import numpy as np

from benchmarks.common.masked_lm_eval import masked_lm_logits

HELDOUT_KEYS = ("token_ids", "padding_mask", "masked_positions", "masked_ids", "masked_weights")


# ----------------------------------------------------------------------------------------------------------
# export: kbert's instances and held-out set as arrays


def export(data: str, heldout_text: str, out: str, max_heldout: int = 2048) -> dict[str, Any]:
    """Writes `data` (a dynamic create-pretraining-data directory) and its held-out set to `out` (.npz)."""
    import tensorflow as tf

    from kbert.pretraining_data import CreatePretrainingDataConfig
    from kbert.pretraining_data.heldout import heldout_from_text
    from kbert.pretraining_data.static_masking import continuation_flags, mask_token_id, special_token_ids
    from kbert.pretraining_data.shards import read_pretraining_metadata, tfrecord_files
    from kbert.text import load_tokenizer
    from kbert.text.bert_tokenizer import read_vocabulary

    metadata = read_pretraining_metadata(data)
    if metadata["masking"] != "dynamic" or metadata["objective"] != "none":
        raise ValueError(f"{data}: export takes masked-LM-only data with dynamic masks, not "
                         f"{metadata['masking']} masks for objective {metadata['objective']!r}")
    seq = metadata["sequence_length"]
    spec = {name: tf.io.FixedLenFeature([seq], tf.int64) for name in ("token_ids", "padding_mask", "word_starts")}
    columns: dict[str, list[np.ndarray]] = {name: [] for name in spec}
    for batch in tf.data.TFRecordDataset(tfrecord_files(data)).batch(4096).map(
            lambda records: tf.io.parse_example(records, spec)).as_numpy_iterator():
        for name, value in batch.items():
            columns[name].append(value)
    arrays = {name: np.concatenate(parts) for name, parts in columns.items()}
    vocabulary = read_vocabulary(str(pathlib.Path(data) / metadata["vocab_file"]))
    if len(vocabulary) >= 2 ** 15:
        raise ValueError(f"{len(vocabulary)} tokens do not fit the int16 ids of the export")
    special = np.zeros(len(vocabulary), bool)
    special[special_token_ids(vocabulary)] = True

    tokenizer = load_tokenizer(str(pathlib.Path(data) / metadata["vocab_file"]), lowercase=metadata["lowercase"])
    settings = ("sequence_length", "max_predictions_per_seq", "masked_lm_prob", "short_seq_prob",
                "whole_word_masking", "language", "layout", "encoding_errors", "lowercase")
    heldout_config = CreatePretrainingDataConfig(input=[heldout_text], objective="none",
                                                 **{k: metadata[k] for k in settings if k in metadata})
    heldout = {name: [] for name in HELDOUT_KEYS}
    for batch in heldout_from_text(heldout_config, tokenizer, 256, max_heldout).as_numpy_iterator():
        for name in HELDOUT_KEYS:
            heldout[name].append(batch[name])
    np.savez_compressed(
        out,
        token_ids=arrays["token_ids"].astype(np.int16),
        padding_mask=arrays["padding_mask"].astype(bool),
        word_starts=arrays["word_starts"].astype(bool),
        is_special=special,
        is_continuation=continuation_flags(vocabulary),
        settings=np.array(json.dumps({"mask_id": mask_token_id(vocabulary), "vocab_size": len(vocabulary),
                                      "max_predictions_per_seq": metadata["max_predictions_per_seq"],
                                      "masked_lm_prob": metadata["masked_lm_prob"],
                                      "whole_word_masking": metadata["whole_word_masking"],
                                      "data": str(data), "heldout_text": heldout_text})),
        **{f"heldout_{name}": np.concatenate(parts) for name, parts in heldout.items()},
    )
    return {"instances": len(arrays["token_ids"]), "heldout_instances": sum(len(p) for p in heldout["token_ids"])}


# ----------------------------------------------------------------------------------------------------------
# train: torch only from here on


def mask_whole_words(ids, valid, word_starts, is_special, is_continuation, *, max_predictions: int,
                     masked_lm_prob: float, mask_id: int, noise, draw, random_ids,
                     whole_word: bool = True) -> dict:
    """`DynamicMasker`'s rule on torch tensors, with the random draws given (so it can be checked exactly).

    `min(max_predictions, max(1, round(length * masked_lm_prob)))` non-special tokens per row, chosen as
    whole words in the order of their first piece's `noise` while they fit (the first word that would
    overflow ends the choice). Chosen tokens become `[MASK]` where `draw` < 0.8, the
    `random_ids` where `draw` < 0.9, else stay.

    Args:
        ids: int64 [batch, seq]. valid, word_starts: bool [batch, seq]. is_special, is_continuation: bool
            [vocab]. noise, draw: float [batch, seq] uniform in [0, 1). random_ids: int64 [batch, seq].

    Returns:
        dict of token_ids [batch, seq], masked_positions, masked_ids (int64) and masked_weights (float)
        [batch, max_predictions], positions ascending and padded with 0.
    """
    import torch

    batch, seq = ids.shape
    candidate = valid & ~is_special[ids]
    lengths = valid.sum(1).to(torch.float32)
    budget = torch.clamp(torch.round(lengths * masked_lm_prob), min=1).clamp(max=max_predictions).to(torch.int64)
    if whole_word:
        starts = ~is_continuation[ids] & word_starts
        previous = torch.nn.functional.pad(candidate[:, :-1], (1, 0))
        group = torch.cumsum((~candidate | starts | ~previous).to(torch.int64), 1) - 1
        score = torch.where(candidate, torch.gather(noise, 1, group), torch.full_like(noise, 2.0))
        order = torch.argsort(score, dim=1, stable=True)
        sorted_candidate = torch.gather(candidate, 1, order)
        count = torch.cumsum(sorted_candidate.to(torch.int64), 1)
        segment = torch.gather(group, 1, order) + torch.arange(batch, device=ids.device)[:, None] * seq
        group_end = torch.zeros(batch * seq, dtype=torch.int64, device=ids.device).scatter_reduce(
            0, segment.flatten(), count.flatten(), "amax")
        chosen_sorted = sorted_candidate & (group_end[segment] <= budget[:, None])
        chosen = torch.zeros_like(candidate).scatter(1, order, chosen_sorted)
    else:  # the `budget` candidates with the smallest noise
        ranked = torch.sort(torch.where(candidate, noise, torch.full_like(noise, 2.0)), 1).values
        threshold = torch.gather(ranked, 1, (budget - 1)[:, None])
        chosen = candidate & (noise <= threshold)
    positions = torch.arange(seq, device=ids.device).expand(batch, seq)
    key = torch.sort(torch.where(chosen, positions, seq + positions), 1).values[:, :max_predictions]
    if key.shape[1] < max_predictions:
        key = torch.nn.functional.pad(key, (0, max_predictions - key.shape[1]), value=2 * seq)
    real = key < seq
    masked_positions = torch.where(real, key, 0)
    replaced = torch.where(draw < 0.8, torch.full_like(ids, mask_id), torch.where(draw < 0.9, random_ids, ids))
    return {"token_ids": torch.where(chosen, replaced, ids), "masked_positions": masked_positions,
            "masked_ids": torch.where(real, torch.gather(ids, 1, masked_positions), 0),
            "masked_weights": real.to(torch.float32)}


class Phase:
    """One phase's data on the device, handing out freshly masked batches in epoch order."""

    def __init__(self, path: str, device, generator) -> None:
        import torch

        with np.load(path) as npz:
            self.settings = json.loads(str(npz["settings"]))
            self.ids = torch.from_numpy(npz["token_ids"].astype(np.int64)).to(device)
            self.valid = torch.from_numpy(npz["padding_mask"]).to(device)
            self.word_starts = torch.from_numpy(npz["word_starts"]).to(device)
            self.is_special = torch.from_numpy(npz["is_special"]).to(device)
            self.is_continuation = torch.from_numpy(npz["is_continuation"]).to(device)
            self.heldout = {k: torch.from_numpy(npz[f"heldout_{k}"]).to(device) for k in HELDOUT_KEYS}
        self.device, self.generator, self.order, self.cursor = device, generator, None, 0

    def batch(self, size: int) -> dict:
        import torch

        if self.order is None or self.cursor + size > len(self.order):
            self.order = torch.randperm(len(self.ids), generator=self.generator, device="cpu").to(self.device)
            self.cursor = 0
        rows = self.order[self.cursor: self.cursor + size]
        self.cursor += size
        ids = self.ids[rows]
        uniform = lambda: torch.rand(ids.shape, device=self.device)  # noqa: E731
        out = mask_whole_words(
            ids, self.valid[rows], self.word_starts[rows], self.is_special, self.is_continuation,
            max_predictions=self.settings["max_predictions_per_seq"], masked_lm_prob=self.settings["masked_lm_prob"],
            mask_id=self.settings["mask_id"], noise=uniform(), draw=uniform(),
            random_ids=torch.randint(0, self.settings["vocab_size"], ids.shape, device=self.device),
            whole_word=self.settings["whole_word_masking"])
        return {**out, "padding_mask": self.valid[rows]}



def heldout_accuracy(model, heldout: dict, batch_size: int = 256) -> float:
    """Masked-LM accuracy on the fixed held-out batches, weighted as kbert's metric is."""
    import torch

    model.eval()
    right = counted = 0.0
    with torch.no_grad():
        for start in range(0, len(heldout["token_ids"]), batch_size):
            part = {k: v[start: start + batch_size] for k, v in heldout.items()}
            logits = masked_lm_logits(model, part["token_ids"].long(), part["padding_mask"].bool(),
                                      part["masked_positions"].long())
            hits = (logits.argmax(-1) == part["masked_ids"].long()).float() * part["masked_weights"]
            right += hits.sum().item()
            counted += part["masked_weights"].sum().item()
    model.train()
    return right / counted


def train(args: argparse.Namespace) -> dict:
    import torch
    from transformers import BertConfig, BertForMaskedLM

    from benchmarks.common.hf_reference import bert_adamw

    device = torch.device(args.device or ("cuda" if torch.cuda.is_available() else "cpu"))
    torch.manual_seed(args.seed)
    torch.backends.cuda.matmul.allow_tf32 = True
    generator = torch.Generator().manual_seed(args.seed)
    datas = {path: Phase(path, device, generator) for path, *_ in args.phase}
    vocab_size = next(iter(datas.values())).settings["vocab_size"]
    model = BertForMaskedLM(BertConfig(
        vocab_size=vocab_size, hidden_size=args.hidden, num_hidden_layers=args.layers,
        num_attention_heads=args.heads, intermediate_size=args.intermediate or 4 * args.hidden,
        hidden_dropout_prob=args.dropout, attention_probs_dropout_prob=args.dropout)).to(device)
    heldout = datas[args.phase[-1][0]].heldout
    curve, began, done = [], time.perf_counter(), 0
    result = {"args": vars(args), "device": str(device), "parameters": sum(p.numel() for p in model.parameters()),
              "curve": curve}

    def record(phase: int, step: int) -> None:
        curve.append({"phase": phase, "step": step, "total_step": done,
                      "heldout_mlm_accuracy": round(heldout_accuracy(model, heldout), 5),
                      "seconds": round(time.perf_counter() - began, 1)})
        result["best"] = max(curve, key=lambda c: c["heldout_mlm_accuracy"])
        pathlib.Path(args.out).write_text(json.dumps(result, indent=1) + "\n")
        print(json.dumps(curve[-1]), flush=True)

    for index, (path, length, batch_size, peak, warmup) in enumerate(args.phase, 1):
        # STEPS, or MINUTES with an "m": then the linear decay runs over the phase's wall time.
        minutes = float(length[:-1]) if length.endswith("m") else None
        steps = None if minutes else int(length)
        optimizer = bert_adamw(model, peak, args.weight_decay, fused=device.type == "cuda")
        phase_began, step = time.perf_counter(), 0
        while True:
            # kbert's LinearWarmupLinearDecay at update `step` (0-based): the warmup value replaces the decay
            # (written here because kbert's schedule needs Keras, which a torch-only device may lack).
            left = (1 - step / steps) if steps else 1 - (time.perf_counter() - phase_began) / (60 * minutes)
            factor = step / warmup if step < warmup else max(0.0, left)
            for group in optimizer.param_groups:
                group["lr"] = peak * factor
            batch = datas[path].batch(batch_size)
            with torch.autocast(device.type, torch.bfloat16, enabled=args.bf16):
                logits = masked_lm_logits(model, batch["token_ids"], batch["padding_mask"], batch["masked_positions"])
            per_token = torch.nn.functional.cross_entropy(logits.float().flatten(0, 1), batch["masked_ids"].flatten(),
                                                          reduction="none")
            loss = (per_token * batch["masked_weights"].flatten()).sum() / batch["masked_weights"].sum().clamp(min=1)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
            step, done = step + 1, done + 1
            last = step == steps if steps else left <= 0
            out_of_time = args.max_minutes and time.perf_counter() - began > 60 * args.max_minutes
            if step % args.eval_every == 0 or last or out_of_time:
                record(index, step)
            if out_of_time:
                result["stopped"] = f"--max-minutes {args.max_minutes} at phase {index} step {step}"
                pathlib.Path(args.out).write_text(json.dumps(result, indent=1) + "\n")
                return result
            if last:
                break
    return result


def phase_spec(text: str) -> tuple[str, str, int, float, int]:
    """`FILE:STEPS:BATCH:LEARNING_RATE:WARMUP` (STEPS may be `MINUTESm`) as a tuple, for `--phase`."""
    parts = text.rsplit(":", 4)
    try:
        path, length, batch, rate, warmup = parts
        float(length[:-1] if length.endswith("m") else int(length))
        return path, length, int(batch), float(rate), int(warmup)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected FILE:STEPS:BATCH:LEARNING_RATE:WARMUP (STEPS or MINUTESm), got {text!r}") from None


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    exporting = commands.add_parser("export", help="a dynamic create-pretraining-data directory to .npz (kbert)")
    exporting.add_argument("--data", required=True)
    exporting.add_argument("--heldout-text", required=True, help="the held-out text (glob) kbert pretrain scores")
    exporting.add_argument("--max-heldout", type=int, default=2048)
    exporting.add_argument("--out", required=True)
    training = commands.add_parser("train", help="BertForMaskedLM on exported phases (torch only)")
    training.add_argument("--phase", action="append", required=True, type=phase_spec,
                          help="FILE:STEPS:BATCH:LEARNING_RATE:WARMUP (STEPS as MINUTESm: decay over wall time)")
    training.add_argument("--layers", type=int, default=2)
    training.add_argument("--hidden", type=int, default=128)
    training.add_argument("--heads", type=int, default=2)
    training.add_argument("--intermediate", type=int, default=0, help="0: 4 x hidden")
    training.add_argument("--dropout", type=float, default=0.0)
    training.add_argument("--bf16", action="store_true", help="bfloat16 autocast for the forward pass")
    training.add_argument("--weight-decay", type=float, default=0.01)
    training.add_argument("--eval-every", type=int, default=1000)
    training.add_argument("--max-minutes", type=float, default=0, help="stop (keeping the curve) after this long")
    training.add_argument("--seed", type=int, default=0)
    training.add_argument("--device", help="default: cuda when there is one")
    training.add_argument("--out", required=True, help="the curve's JSON")
    args = parser.parse_args(argv)
    if args.command == "export":
        print(json.dumps(export(args.data, args.heldout_text, args.out, args.max_heldout)))
    else:
        train(args)


if __name__ == "__main__":
    main()
