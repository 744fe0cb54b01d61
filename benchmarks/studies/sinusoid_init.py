"""A fresh pretraining checkpoint whose learned position table starts as sinusoids, for `kbert pretrain --init`.

A probe of the masked-LM plateau: BERT learns its position table from a random start, so attending to a
neighbour has to be learned position by position; sinusoids (Vaswani et al. 2017) give every position the
same relation to the next from step 0. The table is scaled to the token table's standard deviation (0.02),
so neither dominates the embedding LayerNorm; every other weight is kbert's usual random start.

    python -m benchmarks.studies.sinusoid_init --vocab runs/en_tiny/data/vocab.txt --out runs/sinusoid_init
    kbert pretrain --config recipes/pretrain_en_tiny.yaml --init runs/sinusoid_init --train ... --out ...
"""

from __future__ import annotations

import argparse


def sinusoids(rows: int, width: int):
    """The (rows, width) table: sin in even columns, cos in odd ones, wavelengths 2π to 10000·2π."""
    import numpy as np

    angle = np.arange(rows)[:, None] / np.power(10000.0, 2 * np.arange(width // 2)[None, :] / width)
    table = np.zeros((rows, width), np.float32)
    table[:, 0::2], table[:, 1::2] = np.sin(angle), np.cos(angle)
    return table


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--vocab", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--preset", default="tiny")
    parser.add_argument("--scale", type=float, default=0.02, help="standard deviation of the table")
    parser.add_argument("--seed", type=int, default=12345)
    args = parser.parse_args(argv)

    import keras

    from kbert.config import BertConfig
    from kbert.convert.checkpoints import save_pretrained
    from kbert.models.bert_encoder import BertEncoder
    from kbert.models.bert_pretrainer import BertPretrainer
    from kbert.text.bert_tokenizer import read_vocabulary

    keras.utils.set_random_seed(args.seed)
    vocabulary = read_vocabulary(args.vocab)
    encoder = BertEncoder(**BertConfig.from_preset(args.preset, vocab_size=len(vocabulary)).to_dict())
    pretrainer = BertPretrainer(encoder, objective="none")
    table = encoder.embeddings.position_embedding.position_embeddings
    values = sinusoids(*table.shape)
    table.assign(values * (args.scale / values.std()))
    save_pretrained(pretrainer, args.out, vocabulary=vocabulary, lowercase=True)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
