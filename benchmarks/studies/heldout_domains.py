"""Masked-LM accuracy of a kbert-pretrained model on text of other domains than its corpus.

The held-out split of `benchmarks/studies/pretrain_quality.py` comes from the training corpus itself; this asks
whether what the model learned carries to other kinds of text. Each text is cut and masked with the run's
own settings (whole-word masking for Chinese) and a fixed seed, and scored with the final model. Default
texts (from ../shared/data, written once into RUN/domains/):

- zh: CMRC 2018 dev contexts (Wikipedia), MSRA NER test sentences (news), book-review dev texts (reviews;
  the recipe pretrains on the *training* reviews, so this one is near the corpus);
- en: SQuAD v1.1 dev contexts (Wikipedia), SST-2 dev sentences (film reviews; the recipe pretrains on
  the *training* sentences), CoNLL-2003 test sentences (Reuters news).

    python -m benchmarks.studies.heldout_domains --run runs/zh --out notebooks/results/heldout_domains_zh.json
    python -m benchmarks.studies.heldout_domains --run runs/en --text mine=my_text.txt --out results.json
"""

from __future__ import annotations

import argparse
import json
import pathlib
import sys

REPO = pathlib.Path(__file__).resolve().parents[2]
DATA = REPO.parent / "shared" / "data"


def _tsv_column(path: pathlib.Path, column: str, join_spaces: bool = False) -> list[str]:
    rows = path.read_text(encoding="utf-8").splitlines()
    index = rows[0].split("\t").index(column)
    texts = [row.split("\t")[index] for row in rows[1:] if row.count("\t") >= index]
    return ["".join(t.split()) if join_spaces else t for t in texts]


def _squad_contexts(path: pathlib.Path) -> list[str]:
    articles = json.loads(path.read_text(encoding="utf-8"))["data"]
    return [p["context"] for a in articles for p in a["paragraphs"]]


def _conll_sentences(path: pathlib.Path) -> list[str]:
    sentences, words = [], []
    for line in [*path.read_text(encoding="utf-8").splitlines(), ""]:
        parts = line.split()
        if parts and parts[0] != "-DOCSTART-":
            words.append(parts[0])
        elif words:
            sentences.append(" ".join(words))
            words = []
    return sentences


DEFAULT_TEXTS = {
    "zh": {"cmrc2018_wikipedia": lambda: _squad_contexts(DATA / "zh_cmrc2018" / "dev.json"),
           "msra_news": lambda: _tsv_column(DATA / "zh_msra_ner" / "test.tsv", "text_a", join_spaces=True),
           "book_review_dev": lambda: _tsv_column(DATA / "zh_book_review" / "dev.tsv", "text_a")},
    "en": {"squad_wikipedia": lambda: _squad_contexts(DATA / "squad_v1.1" / "dev-v1.1.json"),
           "sst2_dev_reviews": lambda: _tsv_column(DATA / "sst2" / "dev.tsv", "sentence"),
           "conll2003_news": lambda: _conll_sentences(DATA / "conll2003" / "test.txt")},
}


def write_texts(language: str, directory: pathlib.Path, group: int = 10) -> dict[str, str]:
    """The default texts as files, `group` passages to a blank-line separated document."""
    directory.mkdir(parents=True, exist_ok=True)
    files = {}
    for name, read in DEFAULT_TEXTS[language].items():
        try:
            passages = read()
        except FileNotFoundError as error:
            print(f"skipped {name}: {error}", file=sys.stderr)
            continue
        path = directory / f"{name}.txt"
        path.write_text("".join(p.strip() + ("\n\n" if (i + 1) % group == 0 else "\n")
                                for i, p in enumerate(passages) if p.strip()), encoding="utf-8")
        files[name] = str(path)
    return files


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run", required=True, help="a pretrain_quality output directory (data/, model/, heldout/)")
    parser.add_argument("--text", nargs="+", metavar="NAME=FILE", help="texts to score (default: the language's)")
    parser.add_argument("--max-instances", type=int, default=1024)
    parser.add_argument("--out", required=True, help="results JSON")
    args = parser.parse_args(argv)

    import glob

    import kbert
    from benchmarks.common.masked_lm_eval import accuracy_by_input, heldout_batches
    from kbert.pretraining_data.shards import read_pretraining_metadata

    run = pathlib.Path(args.run)
    language = read_pretraining_metadata(run / "data")["language"]
    if args.text:
        texts = dict(item.split("=", 1) for item in args.text)
    else:
        texts = write_texts(language, run / "domains")
    texts = {"corpus_heldout": str(run / "heldout" / "*.txt"), **texts}
    model = kbert.load_pretrainer(run / "model", objective="none")
    mask_id = kbert.load_tokenizer(run / "model").get_vocabulary().index("[MASK]")
    results = {"language": language, "run": str(run), "accuracy": {}, "instances": {}, "by_input": {}}
    for name, pattern in texts.items():
        batches = heldout_batches(run, sorted(glob.glob(pattern)), args.max_instances)
        results["by_input"][name] = split = accuracy_by_input(model, batches, mask_id)
        results["accuracy"][name] = split["overall"]
        results["instances"][name] = sum(len(b["token_ids"]) for b in batches)
        print(f"{name}: masked-LM accuracy {results['accuracy'][name]:.3f} ({results['instances'][name]} "
              f"instances); at [MASK] {split['accuracy']['[MASK]']:.3f} with "
              f"{split['distinct_guesses_at_mask']} distinct guesses, kept {split['accuracy']['kept']:.3f}, "
              f"random {split['accuracy']['random']:.3f}", flush=True)
    pathlib.Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    pathlib.Path(args.out).write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
