"""The phone record: for every family and task, whether `kbert export --tflite` (and `--mediapipe`) converts,
the file sizes, LiteRT's batch-1 latency against the SavedModel's, and LiteRT's agreement with the SavedModel.

    python -m benchmarks.studies.tflite_record [--texts 200] [--timed 50] [--repeats 3] [--flex-python PYTHON]

Models: all-MiniLM-L6-v2's shape for each family (6 layers, width 384, 12 heads, feed-forward 1,536): BERT with
its real weights and vocabulary; ALBERT and RoBERTa with random weights (no pretrained ones offline) and a
SentencePiece model or a byte-level BPE of 8,000 pieces learned here from SST-2's training sentences. Heads are
random, scaled so that answers differ between texts. Sequence length 64 (QA 128, its context cut at 400
characters). Held-out texts: SST-2 dev sentences (SQuAD dev questions and contexts for QA).

Agreement is on each task's answer: classify, the label (and max |probability difference|); regress, max |score
difference|; tag, every word's tag; QA, the answer's characters; embed, max |vector difference|. Latency: the
median over `--timed` texts of one text a call, best of `--repeats` passes, SavedModel and LiteRT interleaved
(one interpreter thread a core, as `kbert predict` runs it). float32 SavedModels and TFLite files; the int8
column is the dynamic-range file's size.

RoBERTa (and ALBERT's tagging and QA) convert only with TensorFlow select ops (`--select-tf-ops`), which kbert's
stack cannot run (LiteRT's Python package and TensorFlow since 2.19 ship without the Flex delegate). With
`--flex-python PYTHON` (a Python whose TensorFlow, 2.18 or earlier, links it, with tensorflow-text of the same
version for ALBERT's ops) such files are converted, and timed and compared there
(`benchmarks.studies.flex_timing`): the same median and passes, but not interleaved with the SavedModel's, which
is timed here just before.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import pathlib
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras
import numpy as np

from benchmarks.common.finetune_tasks import DATA
from benchmarks.common.report import host_line, load_average
from benchmarks.serving import _dir_size

SIZES = dict(hidden_size=384, num_hidden_layers=6, num_attention_heads=12, intermediate_size=1536,
             max_position_embeddings=514)
TASKS = ("classify", "regress", "tag", "qa", "embed")
ANSWER = {"classify": "label_id", "regress": "score", "tag": "word_label_id", "qa": "answer", "embed": "embedding"}


def sst2(split: str) -> list[str]:
    with open(DATA / "sst2" / f"{split}.tsv", encoding="utf-8", newline="") as source:
        return [row["sentence"].strip() for row in csv.DictReader(source, delimiter="\t", quoting=csv.QUOTE_NONE)]


def squad(rows: int) -> tuple[list[str], list[str]]:
    articles = json.loads((DATA / "squad_v1.1" / "dev-v1.1.json").read_text(encoding="utf-8"))["data"]
    pairs = [(qa["question"], paragraph["context"][:400]) for article in articles
             for paragraph in article["paragraphs"] for qa in paragraph["qas"][:1]]
    return [q for q, _ in pairs[:rows]], [c for _, c in pairs[:rows]]


def family_encoder_and_tokenizer(family: str, work: pathlib.Path):
    """(encoder, tokenizer) of a family at all-MiniLM-L6-v2's shape (see the module's notes)."""
    import kbert
    from kbert.text.byte_level_vocab import learn_byte_level_bpe
    from kbert.text.sentencepiece_vocabulary import learn_sentencepiece

    if family == "bert":
        path = kbert.pretrained.minilm_path()
        return kbert.load_pretrained(path), kbert.load_tokenizer(path)
    corpus = work / "sst2_train.txt"
    corpus.write_text("\n".join(sst2("train")) + "\n", encoding="utf-8")
    keras.utils.set_random_seed(0)
    if family == "albert":
        tokenizer = kbert.SentencePieceTokenizer(learn_sentencepiece([corpus], size=8000, verbose=False))
        encoder = kbert.AlbertEncoder(vocab_size=tokenizer.vocabulary_size(), embedding_size=128, **SIZES)
        return encoder, tokenizer
    tokens, merges = learn_byte_level_bpe([corpus], size=8000, verbose=False)
    tokenizer = kbert.ByteLevelBpeTokenizer(tokens, merges)
    return kbert.RobertaEncoder(vocab_size=len(tokens), type_vocab_size=1, **SIZES), tokenizer


def task_source(task: str, encoder, tokenizer):
    """An `ExportSource` of `task` on `encoder` with a random, scaled head."""
    import kbert
    from kbert.export import ExportSource
    from kbert.tasks import ClassificationTask, EmbeddingTask, QuestionAnsweringTask, RegressionTask, TaggingTask

    keras.utils.set_random_seed(1)
    copy = encoder  # shared by the task models: each is exported on its own, none is trained
    if task in ("classify", "regress"):
        model = kbert.BertClassifier(copy, 2 if task == "classify" else 1)
        spec = ClassificationTask(labels=["negative", "positive"]) if task == "classify" else RegressionTask()
    elif task == "tag":
        labels = ["O", "B-PER", "I-PER", "B-ORG", "I-ORG", "B-LOC", "I-LOC", "B-MISC", "I-MISC"]
        model, spec = kbert.BertTokenClassifier(copy, len(labels)), TaggingTask(labels=labels)
    elif task == "qa":
        model, spec = kbert.BertQuestionAnswerer(copy), QuestionAnsweringTask()
    else:
        model, spec = kbert.BertSentenceEmbedder(copy, pooling="mean", normalize=True), EmbeddingTask()
    head = next((model.get_layer(name) for name in ("logits", "span_logits") if name in
                 [layer.name for layer in model.layers]), None)
    if head is not None:
        head.kernel.assign(head.kernel * 20)
    return ExportSource(model, tokenizer, spec, 128 if task == "qa" else 64)


def answers(outputs: dict, task: str, inputs: dict) -> list:
    """Each row's answer, comparable across runtimes."""
    if task == "qa":
        contexts = inputs["context"]
        return [contexts[i][int(s):int(e)] if s >= 0 else "" for i, (s, e) in
                enumerate(zip(np.asarray(outputs["start_char"]).ravel(), np.asarray(outputs["end_char"]).ravel()))]
    value = np.asarray(outputs[ANSWER[task]])
    if task == "tag":  # words past a row's num_words are padding, as wide as the batch's longest row
        return [row[:int(n)] for row, n in zip(value, np.asarray(outputs["num_words"]).ravel())]
    return list(value)


def agreement(task: str, saved: list, lite: list) -> str:
    if task in ("regress", "embed"):
        return f"max diff {max(float(np.max(np.abs(np.asarray(a) - np.asarray(b)))) for a, b in zip(saved, lite)):.1e}"
    same = sum(bool(np.array_equal(np.asarray(a), np.asarray(b))) for a, b in zip(saved, lite))
    return f"{same}/{len(saved)} equal"


def flex_answers(python: str, path: pathlib.Path, task: str, inputs: dict, timed: int, repeats: int,
                 work: pathlib.Path) -> tuple[list, float]:
    """(each text's answer, one a call; the median seconds a call) of a select-ops file, run by `python`."""
    import subprocess

    request = {"file": str(path), "inputs": inputs, "timed": timed, "repeats": repeats, "threads": os.cpu_count(),
               "out": str(work / "flex.npz")}
    (work / "flex.json").write_text(json.dumps(request), encoding="utf-8")
    subprocess.run([python, "-m", "benchmarks.studies.flex_timing", str(work / "flex.json")], check=True,
                   cwd=pathlib.Path(__file__).resolve().parents[2], capture_output=True)
    got = np.load(work / "flex.npz", allow_pickle=True)
    lite = []
    for i in range(len(next(iter(inputs.values())))):
        outputs = {key.split("/")[0]: got[key] for key in got.files if key.endswith(f"/{i}")}
        lite += answers(outputs, task, {k: v[i:i + 1] for k, v in inputs.items()})
    return lite, float(got["median_seconds"])


def measure_one(source, task: str, inputs: dict, timed: int, repeats: int, work: pathlib.Path,
                flex_python: str | None = None) -> dict:
    import tensorflow as tf

    from kbert.export import export, tflite_convert
    from kbert.export import tflite as tflite_lib
    from kbert.export.mediapipe_convert import refusal as mediapipe_refusal

    refused = mediapipe_refusal(source)
    row: dict = {"mediapipe": f"refused: {refused.split(' (')[0].split(':')[0]}" if refused else "converts"}
    # Select ops only where LiteRT's built-ins cannot hold the tokenizer (RoBERTa; ALBERT's tagging and QA).
    select = bool(flex_python) and bool(tflite_convert.refusal(source)) and not tflite_convert.refusal(source, True)
    try:
        out = export(source, work / "1", tflite=True, select_tf_ops=select)
    except ValueError as refusal:
        row["tflite"] = str(refusal).split(":")[0].split(". ")[0]
        return row
    row["tflite"] = "converts with --select-tf-ops (Flex)" if select else "converts"
    signature = tf.saved_model.load(str(out)).signatures["serving_default"]
    row["saved_mb"] = _dir_size(out) / 1e6
    row["tflite_mb"] = (out / "model.tflite").stat().st_size / 1e6
    row["int8_mb"] = len(tflite_convert.convert(source, quantize="dynamic", select_tf_ops=select)) / 1e6
    saved = answers(signature(**{k: tf.constant(v) for k, v in inputs.items()}), task, inputs)
    saved_runner = lambda one: signature(**{k: tf.constant(v) for k, v in one.items()})  # noqa: E731
    calls = [{k: v[i:i + 1] for k, v in inputs.items()} for i in range(timed)]
    if select:  # the SavedModel timed here, then the file in the other Python
        best = best_medians({"saved": saved_runner}, calls, repeats)
        lite, lite_seconds = flex_answers(flex_python, out / "model.tflite", task, inputs, timed, repeats, work)
        row["agreement"] = agreement(task, saved, lite)
        row["saved_ms"], row["lite_ms"] = 1000 * best["saved"], 1000 * lite_seconds
        return row
    interpreter = tflite_lib.interpreter(str(out / "model.tflite"), num_threads=os.cpu_count())
    lite = []
    for i in range(len(next(iter(inputs.values())))):
        one = {k: v[i:i + 1] for k, v in inputs.items()}
        lite += answers(tflite_lib.run(interpreter, one), task, one)
    row["agreement"] = agreement(task, saved, lite)
    best = best_medians({"saved": saved_runner, "lite": lambda one: tflite_lib.run(interpreter, one)}, calls,
                        repeats)
    row["saved_ms"], row["lite_ms"] = 1000 * best["saved"], 1000 * best["lite"]
    return row


def best_medians(runners: dict, calls: list, repeats: int) -> dict[str, float]:
    """Each runner's median seconds a call over `calls`, best of `repeats` passes, the runners interleaved (one
    warm-up call each first)."""
    best = {name: float("inf") for name in runners}
    for runner in runners.values():
        runner(calls[0])
    for _ in range(repeats):
        for name, runner in runners.items():
            seconds = []
            for call in calls:
                began = time.perf_counter()
                runner(call)
                seconds.append(time.perf_counter() - began)
            best[name] = min(best[name], float(np.median(seconds)))
    return best


def table(rows: dict) -> str:
    lines = ["| family | task | --tflite | --mediapipe | SavedModel / TFLite / int8 MB | batch 1, ms: SavedModel / "
             "LiteRT (ratio) | LiteRT vs SavedModel |", "|---|---|---|---|---|---|---|"]
    for (family, task), r in rows.items():
        if not r["tflite"].startswith("converts"):
            lines.append(f"| {family} | {task} | refused: {r['tflite']} | {r['mediapipe']} | | | |")
            continue
        lines.append(f"| {family} | {task} | {r['tflite']} | {r['mediapipe']} | {r['saved_mb']:.1f} / "
                     f"{r['tflite_mb']:.1f}"
                     f" / {r['int8_mb']:.1f} | {r['saved_ms']:.2f} / {r['lite_ms']:.2f} "
                     f"({r['saved_ms'] / r['lite_ms']:.2f}x) | {r['agreement']} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--families", nargs="+", default=["bert", "albert", "roberta"])
    parser.add_argument("--tasks", nargs="+", default=list(TASKS), choices=TASKS)
    parser.add_argument("--texts", type=int, default=200, help="held-out texts compared")
    parser.add_argument("--timed", type=int, default=50, help="texts timed one a call")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--flex-python", help="a Python whose TensorFlow links the Flex delegate (<= 2.18): convert "
                                              "what LiteRT's built-ins cannot hold with --select-tf-ops and run "
                                              "those files there")
    args = parser.parse_args()
    texts = sst2("dev")[:args.texts]
    questions, contexts = squad(args.texts)
    rows = {}
    with tempfile.TemporaryDirectory() as scratch:
        work = pathlib.Path(scratch)
        for family in args.families:
            encoder, tokenizer = family_encoder_and_tokenizer(family, work)
            for task in args.tasks:
                inputs = {"question": questions, "context": contexts} if task == "qa" else {"text": texts}
                source = task_source(task, encoder, tokenizer)
                rows[family, task] = measure_one(source, task, inputs, min(args.timed, args.texts), args.repeats,
                                                 work / family / task, args.flex_python)
                print(family, task, rows[family, task], flush=True)
    print(f"\nHost: {host_line()}; load average at the end {load_average()}.\n")
    print(table(rows))


if __name__ == "__main__":
    main()
