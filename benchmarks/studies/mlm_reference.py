"""Hugging Face `BertForMaskedLM` (PyTorch) trained on kbert's own pretraining batches, to compare curves.

Reads a `kbert create-pretraining-data` directory through `kbert.pretraining_data.load_pretraining_dataset`
(so both sides see the same masked batches in the same order for a seed), builds a BERT of the preset's
shape with transformers' own initialisation, and trains it with `torch.optim.AdamW` (eps 1e-6, weight decay
0.01 except on biases and LayerNorm), clipping at global norm 1, and kbert's schedule itself
(`LinearWarmupLinearDecay`: linear warmup, then linear decay to 0 at `--total-steps`). The loss is the
masked-LM cross-entropy at the masked positions (`BertForMaskedLM`'s head applied there only: the same
numbers as on every position, less compute). Prints the training masked-LM accuracy over each 100 steps.

    python -m benchmarks.studies.mlm_reference --data runs/en_tiny/data --steps 1000
"""

from __future__ import annotations

import argparse
import json
import time


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", required=True, help="a create-pretraining-data directory")
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--preset", default="tiny")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--learning-rate", type=float, default=1e-3)
    parser.add_argument("--warmup-steps", type=int, default=1000)
    parser.add_argument("--total-steps", type=int, default=13000, help="where the linear decay reaches 0")
    parser.add_argument("--seed", type=int, default=12345, help="data order and masks (the recipe's seed)")
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args(argv)

    import numpy as np
    import torch
    from transformers import BertConfig as HFConfig, BertForMaskedLM

    from benchmarks.common.hf_reference import bert_adamw
    from benchmarks.common.masked_lm_eval import masked_lm_logits
    from kbert.config import BertConfig
    from kbert.optim.schedules import LinearWarmupLinearDecay
    from kbert.pretraining_data.tfrecords import load_pretraining_dataset
    from kbert.text.bert_tokenizer import read_vocabulary

    torch.manual_seed(0)
    torch.set_num_threads(args.threads)
    shape = BertConfig.from_preset(args.preset, vocab_size=len(read_vocabulary(f"{args.data}/vocab.txt")))
    model = BertForMaskedLM(HFConfig(
        vocab_size=shape.vocab_size, hidden_size=shape.hidden_size, num_hidden_layers=shape.num_hidden_layers,
        num_attention_heads=shape.num_attention_heads, intermediate_size=shape.intermediate_size))
    optimizer = bert_adamw(model, args.learning_rate)

    # kbert's own schedule as a factor of the peak rate; LambdaLR counts updates from 0, as Keras does.
    factor = LinearWarmupLinearDecay(1.0, num_train_steps=args.total_steps, warmup_steps=args.warmup_steps)
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: float(factor(step)))
    dataset = load_pretraining_dataset(args.data, args.batch_size, repeat=True, seed=args.seed)
    start, right, counted = time.perf_counter(), 0.0, 0.0
    model.train()
    for step, batch in enumerate(dataset.as_numpy_iterator(), 1):
        ids = torch.from_numpy(batch["token_ids"].astype(np.int64))
        positions = torch.from_numpy(batch["masked_positions"].astype(np.int64))
        weights = torch.from_numpy(batch["masked_weights"].copy())
        targets = torch.from_numpy(batch["masked_ids"].astype(np.int64))
        logits = masked_lm_logits(model, ids, torch.from_numpy(batch["padding_mask"].copy()), positions,
                                  torch.from_numpy(batch["segment_ids"].astype(np.int64)))
        per_token = torch.nn.functional.cross_entropy(logits.flatten(0, 1), targets.flatten(), reduction="none")
        loss = (per_token * weights.flatten()).sum() / weights.sum().clamp(min=1.0)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        schedule.step()
        optimizer.zero_grad()
        with torch.no_grad():
            right += ((logits.argmax(-1) == targets).float() * weights).sum().item()
            counted += weights.sum().item()
        if step % 100 == 0:
            print(json.dumps({"step": step, "loss": round(loss.item(), 4),
                              "mlm_accuracy_last_100": round(right / counted, 4),
                              "seconds": round(time.perf_counter() - start, 1)}), flush=True)
            right = counted = 0.0
        if step >= args.steps:
            break


if __name__ == "__main__":
    main()
