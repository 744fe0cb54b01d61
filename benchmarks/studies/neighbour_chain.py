"""How long does a BERT take to learn to read its neighbours? Masked LM on a chain where context decides all.

Every sequence follows one fixed random permutation of the vocabulary (token i+1 = perm[token i]), 15% of its
positions are `[MASK]`, and nothing else varies: a model that reads a neighbour scores 100%, one that does
not scores 1/vocabulary (0.5%). At initialisation BERT's attention is uniform over the sequence (scores of
std ~0.05), so the neighbour's share of what a position sees is 1/length and the gradient that would make
attention positional is that small too: training sits at chance for a while, then climbs. Pretraining on
real text shows the same plateau (BENCHMARKS.md, "The masked-LM plateau"); this probe isolates it and times
it against the sequence length. `--framework torch` runs Hugging Face's `BertForMaskedLM` on the same
batches for comparison.

    python -m benchmarks.studies.neighbour_chain --seq-length 128 --steps 2000
    python -m benchmarks.studies.neighbour_chain --seq-length 32 --steps 1200
"""

from __future__ import annotations

import argparse
import json

import numpy as np

MASK_ID = 3  # any id below FIRST_WORD; the chain uses FIRST_WORD and up
FIRST_WORD = 5


def chain_batches(vocab_size: int, seq_length: int, predictions: int, batch_size: int, seed: int):
    """Yields (token_ids, masked_positions, masked_ids) forever; masked positions avoid position 0."""
    rng = np.random.default_rng(seed)
    following = np.arange(vocab_size)
    following[FIRST_WORD:] = rng.permutation(np.arange(FIRST_WORD, vocab_size))
    while True:
        ids = np.zeros((batch_size, seq_length), np.int32)
        ids[:, 0] = rng.integers(FIRST_WORD, vocab_size, batch_size)
        for i in range(1, seq_length):
            ids[:, i] = following[ids[:, i - 1]]
        positions = np.sort(np.stack([rng.choice(np.arange(1, seq_length), predictions, replace=False)
                                      for _ in range(batch_size)]), axis=1).astype(np.int32)
        targets = np.take_along_axis(ids, positions, 1)
        masked = ids.copy()
        np.put_along_axis(masked, positions, MASK_ID, 1)
        yield masked, positions, targets


def train_kbert(args: argparse.Namespace) -> list[float]:
    """Mean training masked-LM accuracy per `--report-every` steps, kbert's pretrainer and optimizer."""
    import tensorflow as tf

    from kbert.models.bert_encoder import BertEncoder
    from kbert.models.bert_pretrainer import BertPretrainer
    from kbert.optim.defaults import create_optimizer

    def features():
        for ids, positions, targets in chain_batches(args.vocab_size, args.seq_length, args.predictions,
                                                     args.batch_size, args.seed):
            yield {"token_ids": ids, "segment_ids": np.zeros_like(ids), "padding_mask": np.ones(ids.shape, bool),
                   "masked_positions": positions, "masked_ids": targets,
                   "masked_weights": np.ones(targets.shape, np.float32),
                   "next_sentence_label": np.zeros(len(ids), np.int32)}

    first = next(features())
    spec = {k: tf.TensorSpec(v.shape, tf.as_dtype(v.dtype)) for k, v in first.items()}
    dataset = tf.data.Dataset.from_generator(features, output_signature=spec).prefetch(4)
    encoder = BertEncoder(vocab_size=args.vocab_size, hidden_size=128, num_hidden_layers=2, num_attention_heads=2,
                          intermediate_size=512, initializer_range=args.initializer_range)
    model = BertPretrainer(encoder, objective="none")
    model.compile(create_optimizer(args.learning_rate, num_train_steps=args.decay_steps, warmup_steps=100))
    history = model.fit(dataset, steps_per_epoch=args.report_every, epochs=args.steps // args.report_every,
                        verbose=2)
    return [float(a) for a in history.history["mlm_accuracy"]]


def train_torch(args: argparse.Namespace) -> list[float]:
    """The same with transformers' `BertForMaskedLM`, `torch.optim.AdamW` and the same schedule."""
    import torch
    import transformers

    from benchmarks.common.hf_reference import bert_adamw

    torch.manual_seed(args.seed)
    config = transformers.BertConfig(vocab_size=args.vocab_size, hidden_size=128, num_hidden_layers=2,
                                     num_attention_heads=2, intermediate_size=512,
                                     initializer_range=args.initializer_range)
    model = transformers.BertForMaskedLM(config)
    optimizer = bert_adamw(model, args.learning_rate)
    schedule = transformers.get_linear_schedule_with_warmup(optimizer, 100, args.decay_steps)
    batches = chain_batches(args.vocab_size, args.seq_length, args.predictions, args.batch_size, args.seed)
    accuracies, window = [], []
    for step in range(args.steps):
        ids, positions, targets = next(batches)
        labels = np.full(ids.shape, -100, np.int64)
        np.put_along_axis(labels, positions, targets, 1)
        labels = torch.tensor(labels)
        output = model(input_ids=torch.tensor(ids, dtype=torch.long), labels=labels)
        output.loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        schedule.step()
        optimizer.zero_grad()
        scored = labels != -100
        window.append((output.logits.argmax(-1)[scored] == labels[scored]).float().mean().item())
        if (step + 1) % args.report_every == 0:
            accuracies.append(float(np.mean(window)))
            print(step + 1, round(accuracies[-1], 4), flush=True)
            window = []
    return accuracies


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--framework", choices=["kbert", "torch"], default="kbert")
    parser.add_argument("--seq-length", type=int, default=128)
    parser.add_argument("--predictions", type=int, help="masked positions a sequence (default: 15%%)")
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--report-every", type=int, default=100)
    parser.add_argument("--decay-steps", type=int, default=2000, help="the linear decay reaches 0 here")
    parser.add_argument("--vocab-size", type=int, default=200)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--learning-rate", type=float, default=1e-3)
    parser.add_argument("--initializer-range", type=float, default=0.02)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", help="write the accuracies as JSON here")
    args = parser.parse_args(argv)
    args.predictions = args.predictions or max(1, round(0.15 * args.seq_length))
    accuracies = (train_kbert if args.framework == "kbert" else train_torch)(args)
    result = {"settings": vars(args), "steps": [args.report_every * (i + 1) for i in range(len(accuracies))],
              "mlm_accuracy": accuracies}
    if args.out:
        with open(args.out, "w", encoding="utf-8") as file:
            json.dump(result, file, indent=2)
    print(json.dumps({"steps": result["steps"], "mlm_accuracy": [round(a, 4) for a in accuracies]}))
    return result


if __name__ == "__main__":
    main()
