"""Serving benchmark: strings-in SavedModel vs HF tokenizers + PyTorch, dynamic vs fixed length, TFLite.

    python -m benchmarks.serving [--model FINETUNED_SST2_DIR] [--train-rows 2000] [--rows 872]

1. Throughput on real SST-2 dev sentences, same MiniLM weights and texts, batches of 32, interleaved runs:
   kbert's strings-in SavedModel (encoder export, padding to each batch's longest row) vs HF `tokenizers`
   + `transformers` BertModel in PyTorch (padding to the longest, as the HF pipeline does), and the
   same SavedModel's graph with fixed length 128; the bfloat16 export (`--precision bfloat16`) against
   PyTorch under `torch.autocast("cpu", dtype=torch.bfloat16)`, with the bfloat16 export's agreement.
   Then the same four pipelines one batch per core (each in a process of its own, one thread a product,
   cores' worth of batches in flight): kbert with `kbert predict`'s serving settings
   (`kbert.export.serving_threads`: also oneDNN's weights laid out once), PyTorch with
   `torch.set_num_threads(1)` and as many Python threads as cores.
2. TFLite float32 and dynamic-range int8 latency per sentence (batch 1) and file sizes.
3. int8 accuracy change on SST-2 dev: a MiniLM classifier (fine-tuned here briefly with kbert's
   BertClassifier + model.fit unless --model is given), SavedModel vs TFLite float vs TFLite int8.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import pathlib
import sys
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np
import tensorflow as tf

import kbert
from benchmarks.common.report import (command_line, cpu_flags_that_matter, cpu_name, host_key, run_in_own_process,
                                      write_section)
from kbert.export import export, load_source
from kbert.export import serving_threads
from kbert.export import tflite as tflite_lib
from kbert.export import tflite_convert
from kbert.layers import token_packing
from kbert.precision import has_native_bf16

SST2 = pathlib.Path(__file__).resolve().parents[2] / "shared" / "data" / "sst2"


def read_sst2(split: str, rows: int) -> tuple[list[str], list[int]]:
    with open(SST2 / f"{split}.tsv", encoding="utf-8") as f:
        reader = csv.DictReader(f, delimiter="\t", quoting=csv.QUOTE_NONE)
        data = [(r["sentence"], int(r["label"])) for r in reader][:rows]
    return [d[0] for d in data], [d[1] for d in data]


def batches(texts: list[str], size: int):
    return [texts[i:i + size] for i in range(0, len(texts), size)]


def time_interleaved(runners: dict, data, repeats: int) -> dict[str, float]:
    """Best-of-`repeats` seconds for one pass over `data`, runners interleaved within each repeat."""
    best = {name: float("inf") for name in runners}
    for name, fn in runners.items():
        fn(data[0])  # warm up
    for _ in range(repeats):
        for name, fn in runners.items():
            start = time.perf_counter()
            for batch in data:
                fn(batch)
            best[name] = min(best[name], time.perf_counter() - start)
    return best


def throughput(texts: list[str], workdir: pathlib.Path, repeats: int) -> tuple[str, dict]:
    import torch

    torch.set_num_threads(os.cpu_count())
    minilm = kbert.pretrained.minilm_path()
    # The checkpoint's encoder alone (pooled_output), though its directory is a sentence-transformers one.
    out = export(load_source(minilm, sequence_length=128, encoder=True), workdir / "encoder" / "1")
    fn = tf.saved_model.load(str(out)).signatures["serving_default"]
    out_bf16 = export(load_source(minilm, sequence_length=128, encoder=True), workdir / "encoder_bf16" / "1",
                      precision="bfloat16")
    fn_bf16 = tf.saved_model.load(str(out_bf16)).signatures["serving_default"]
    # The same exports traced before the encoder ran on real tokens only: every padded position computed.
    with token_packing.padded():
        padded = {precision: export(load_source(minilm, sequence_length=128, encoder=True),
                                    workdir / f"encoder_padded_{precision}" / "1", precision=precision)
                  for precision in ("float32", "bfloat16")}
    fn_padded = {p: tf.saved_model.load(str(d)).signatures["serving_default"] for p, d in padded.items()}
    pre = tf.saved_model.load(str(out)).signatures["preprocess"]
    encoder = kbert.load_pretrained(minilm)
    fixed = kbert.BertPreprocessor(kbert.load_tokenizer(minilm), sequence_length=128, padding="fixed")

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
    def fixed_128(text):
        x = {k: tf.cast(v, tf.int32) for k, v in fixed(text).items()}
        return encoder(x, training=False)["pooled_output"]

    hf, hf_bf16 = hf_pipelines()

    data = batches(texts, 32)
    # Same answers first: pooled outputs of kbert's export and PyTorch agree.
    a = fn(text=tf.constant(data[0]))["pooled_output"].numpy()
    b = hf(data[0]).numpy()
    max_diff = float(np.abs(a - b).max())
    bf16_diff = float(np.abs(fn_bf16(text=tf.constant(data[0]))["pooled_output"].numpy() - a).max())
    torch_bf16_diff = float(np.abs(hf_bf16(data[0]).numpy() - b).max())
    padded_diff = float(np.abs(fn_padded["float32"](text=tf.constant(data[0]))["pooled_output"].numpy() - a).max())
    runners = {
        "kbert SavedModel (strings in, dynamic length)": lambda batch: fn(text=tf.constant(batch)),
        "kbert SavedModel bfloat16 (--precision bfloat16)": lambda batch: fn_bf16(text=tf.constant(batch)),
        "kbert SavedModel, padded positions computed (before)":
            lambda batch: fn_padded["float32"](text=tf.constant(batch)),
        "kbert SavedModel bfloat16, padded positions computed (before)":
            lambda batch: fn_padded["bfloat16"](text=tf.constant(batch)),
        "kbert graph, fixed length 128": lambda batch: fixed_128(tf.constant(batch)),
        "HF tokenizers + PyTorch (dynamic length)": hf,
        "HF tokenizers + PyTorch, bf16 autocast": hf_bf16,
    }
    best = time_interleaved(runners, data, repeats)
    mean_len = float(np.mean([pre(text=tf.constant([t]))["padding_mask"].numpy().sum() for t in texts[:200]]))
    masks = [pre(text=tf.constant(batch))["padding_mask"].numpy() for batch in data]
    real = sum(int(m.sum()) for m in masks) / sum(m.size for m in masks)
    base = best["HF tokenizers + PyTorch (dynamic length)"]
    torch_best = min(base, best["HF tokenizers + PyTorch, bf16 autocast"])
    lines = ["| pipeline (MiniLM-L6, batch 32) | sentences/s | vs PyTorch float32 | vs PyTorch's best |",
             "|---|---|---|---|"]
    for name, seconds in best.items():
        lines.append(f"| {name} | {len(texts) / seconds:.0f} | {base / seconds:.2f}x | {torch_best / seconds:.2f}x |")
    note = (f"\n{len(texts)} SST-2 dev sentences (mean {mean_len:.1f} WordPieces with [CLS]/[SEP]), best of "
            f"{repeats} interleaved passes; batches of 32 in file order are {100 * real:.0f}% real tokens, "
            f"{100 * (1 - real):.0f}% padding. Max |pooled_output difference| kbert vs PyTorch: {max_diff:.1e}; "
            f"real tokens only vs padded: {padded_diff:.1e}; "
            f"bfloat16 vs float32: kbert {bf16_diff:.1e}, PyTorch {torch_bf16_diff:.1e}. CPU "
            f"{'has' if has_native_bf16() else 'lacks'} native bfloat16 (avx512_bf16 / amx_bf16).")
    torch_rates = {k: len(texts) / v for k, v in best.items() if k.startswith("HF")}
    return "\n".join(lines) + note, {"max_diff": max_diff, "torch": torch_rates,
                                     "exports": {"float32": str(out), "bfloat16": str(out_bf16),
                                                 **{f"{p}-padded": str(d) for p, d in padded.items()}}}


def hf_pipelines():
    """HF `tokenizers` + transformers' BertModel on MiniLM, padding to each batch's longest row: the float32
    pipeline and the one under bf16 autocast, each `batch of texts -> pooled output`."""
    import tokenizers
    import torch
    import transformers

    minilm = kbert.pretrained.minilm_path()
    hf_tok = tokenizers.Tokenizer.from_file(str(minilm / "tokenizer.json"))
    hf_tok.enable_padding()
    hf_tok.enable_truncation(128)
    hf_model = transformers.BertModel.from_pretrained(str(minilm)).eval()

    def hf(batch):
        enc = hf_tok.encode_batch(batch)
        ids = torch.tensor([e.ids for e in enc])
        mask = torch.tensor([e.attention_mask for e in enc])
        with torch.inference_mode():
            return hf_model(input_ids=ids, attention_mask=mask, token_type_ids=torch.zeros_like(ids)).pooler_output

    def hf_bf16(batch):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            return hf(batch).float()

    return hf, hf_bf16


# One batch per core, in a process of its own: name -> (framework, precision).
IN_FLIGHT = {
    "kbert SavedModel, one batch per core (`kbert predict`'s settings)": ("kbert", "float32"),
    "kbert SavedModel bfloat16, one batch per core": ("kbert", "bfloat16"),
    "kbert SavedModel, padded positions computed (before), one batch per core": ("kbert", "float32-padded"),
    "kbert SavedModel bfloat16, padded positions computed (before), one batch per core": ("kbert", "bfloat16-padded"),
    "HF tokenizers + PyTorch, one batch per core": ("torch", "float32"),
    "HF tokenizers + PyTorch bf16 autocast, one batch per core": ("torch", "bfloat16"),
}


def in_flight_child(spec: dict) -> float:
    """Sentences/s of one pipeline with `cores()` batches in flight, one thread a product (a fresh process)."""
    framework, precision = IN_FLIGHT[spec["name"]]
    workers = serving_threads.cores()
    texts, _ = read_sst2("dev", spec["rows"])
    if framework == "kbert":
        serving_threads.apply_serving_environment()
        serving_threads.configure_serving_threads(workers)
        import tensorflow_text  # noqa: F401  (registers the ops the export uses)

        serve = tf.saved_model.load(spec["exports"][precision]).signatures["serving_default"]
        fn = lambda batch: serve(text=tf.constant(batch))["pooled_output"].numpy()  # noqa: E731
    else:
        import torch

        torch.set_num_threads(1)
        hf, hf_bf16 = hf_pipelines()
        fn = hf_bf16 if precision == "bfloat16" else hf
    parts = serving_threads.batches(len(texts), 32, 1)
    serving_threads.run_in_flight(lambda r: fn(texts[r.start:r.stop]), parts[:workers], workers)  # warm up
    best = float("inf")
    for _ in range(spec["repeats"]):
        start = time.perf_counter()
        serving_threads.run_in_flight(lambda r: fn(texts[r.start:r.stop]), parts, workers)
        best = min(best, time.perf_counter() - start)
    return len(texts) / best


def in_flight(exports: dict[str, str], rows: int, repeats: int, best_single: dict[str, float]) -> str:
    """The `IN_FLIGHT` table: each pipeline in its own process, the order reversed for a second round (best
    of both kept), with ratios against PyTorch's best of every row, this table's and the one above."""
    rate: dict[str, float] = {}
    for names in (list(IN_FLIGHT), list(reversed(IN_FLIGHT))):
        for name in names:
            spec = json.dumps({"name": name, "exports": exports, "rows": rows, "repeats": repeats})
            rate[name] = max(rate.get(name, 0.0), run_in_own_process("benchmarks.serving", spec, []))
    torch_best = max([v for k, v in rate.items() if IN_FLIGHT[k][0] == "torch"] + list(best_single.values()))
    lines = ["| pipeline (MiniLM-L6, batch 32, one batch per core) | sentences/s | vs PyTorch's best |", "|---|---|---|"]
    lines += [f"| {name} | {value:.0f} | {value / torch_best:.2f}x |" for name, value in rate.items()]
    return ("\n".join(lines) + f"\n\nPyTorch's best, over both tables: {torch_best:.0f} sentences/s. Each row "
            f"in a process of its own, best of {repeats} passes in each of two rounds (the second in reverse "
            f"order); {serving_threads.cores()} batches in flight.")


def finetune_classifier(rows: int, workdir: pathlib.Path) -> pathlib.Path:
    """MiniLM + kbert's BertClassifier, one epoch on the first `rows` SST-2 train rows (seq 64)."""
    minilm = kbert.pretrained.minilm_path()
    tokenizer = kbert.load_tokenizer(minilm)
    model = kbert.BertClassifier(kbert.load_pretrained(minilm), num_classes=2)
    model.compile()
    model.optimizer.learning_rate = 5e-5
    texts, labels = read_sst2("train", rows)
    pre = kbert.BertPreprocessor(tokenizer, sequence_length=64)
    ds = (tf.data.Dataset.from_tensor_slices((texts, labels)).shuffle(rows, seed=0).batch(32)
          .map(lambda t, y: ({k: tf.cast(v, tf.int32) for k, v in pre(t).items()}, y)))
    model.fit(ds, epochs=1, verbose=2)
    directory = workdir / "sst2_model"
    kbert.save_model(model, directory, tokenizer, kbert.ClassificationTask(labels=["negative", "positive"]),
                     sequence_length=64)
    return directory


def tflite_section(model_dir: pathlib.Path, workdir: pathlib.Path, rows: int, repeats: int) -> str:
    texts, labels = read_sst2("dev", rows)
    source = load_source(model_dir)
    saved = export(source, workdir / "cls" / "1")
    fn = tf.saved_model.load(str(saved)).signatures["serving_default"]
    sm_pred = np.concatenate([fn(text=tf.constant(b))["label_id"].numpy() for b in batches(texts, 64)])
    files = {q: tflite_convert.convert(source, quantize=q) for q in ("none", "dynamic")}
    interps = {q: tflite_lib.interpreter(b, num_threads=os.cpu_count()) for q, b in files.items()}
    preds, probs = {}, {}
    for q, it in interps.items():
        outs = [tflite_lib.run(it, {"text": [t]}) for t in texts]
        preds[q] = np.array([o["label_id"][0] for o in outs])
        probs[q] = np.stack([o["probabilities"][0] for o in outs])
    sm_probs = np.concatenate([fn(text=tf.constant(b))["probabilities"].numpy() for b in batches(texts, 64)])
    sample = [[t] for t in texts[:200]]
    best = time_interleaved({q: (lambda it: lambda b: tflite_lib.run(it, {"text": b}))(it)
                             for q, it in interps.items()}
                            | {"sm": lambda b: fn(text=tf.constant(b))}, sample, repeats)
    acc = {q: float(np.mean(p == np.array(labels))) for q, p in preds.items()}
    sm_acc = float(np.mean(sm_pred == np.array(labels)))
    weights = sum(int(np.prod(w.shape)) * 4 for w in source.model.weights)
    lines = [
        "| runtime (SST-2 classifier, batch 1) | ms / sentence | file size | dev accuracy |",
        "|---|---|---|---|",
        f"| SavedModel (TF) | {1000 * best['sm'] / len(sample):.2f} | {_dir_size(saved) / 1e6:.1f} MB | {100 * sm_acc:.2f} |",
        f"| TFLite float32 | {1000 * best['none'] / len(sample):.2f} | {len(files['none']) / 1e6:.1f} MB | {100 * acc['none']:.2f} |",
        f"| TFLite dynamic-range int8 | {1000 * best['dynamic'] / len(sample):.2f} | {len(files['dynamic']) / 1e6:.1f} MB | {100 * acc['dynamic']:.2f} |",
    ]
    note = (f"\nWeights {weights / 1e6:.1f} MB float32; SavedModel/(weights) = {_dir_size(saved) / weights:.3f}. "
            f"int8 size ratio {len(files['dynamic']) / len(files['none']):.2f}; accuracy change int8 - float "
            f"{100 * (acc['dynamic'] - acc['none']):+.2f} points on {len(texts)} dev sentences; "
            f"max |prob| TFLite float vs SavedModel {np.abs(probs['none'] - sm_probs).max():.1e} "
            f"(label agreement {100 * np.mean(preds['none'] == sm_pred):.2f}%). "
            f"Classifier: {source.model.name} from {model_dir.name}.")
    return "\n".join(lines) + note


def _dir_size(path: pathlib.Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file() and p.name != "model.tflite")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=pathlib.Path, default=None, help="fine-tuned SST-2 model directory")
    parser.add_argument("--train-rows", type=int, default=2000)
    parser.add_argument("--rows", type=int, default=872, help="SST-2 dev rows")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--skip-tflite", action="store_true")
    parser.add_argument("--one", help=argparse.SUPPRESS)  # a child process: one IN_FLIGHT row, printed as JSON
    args = parser.parse_args()
    if args.one:
        print(json.dumps(in_flight_child(json.loads(args.one))))
        return
    if not SST2.is_dir():
        sys.exit(f"SST-2 not found at {SST2}")
    texts, _ = read_sst2("dev", args.rows)
    machine = (f"{cpu_name()} ({host_key()}; {cpu_flags_that_matter()}), {os.cpu_count()} CPU cores, TF "
               f"{tf.__version__}; load average "
               f"{os.getloadavg()[0]:.2f} at the start; {time.strftime('%Y-%m-%d')}")
    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        table, facts = throughput(texts, tmp, args.repeats)
        table += "\n\n" + in_flight(facts["exports"], args.rows, args.repeats, facts["torch"])
        body = f"Command: `{command_line()}`  \nMachine: {machine}\n\n{table}\n"
        write_section(f"serving {host_key()}", body)
        print(body)
        if not args.skip_tflite:
            model_dir = args.model or finetune_classifier(args.train_rows, tmp)
            body += "\n" + tflite_section(model_dir, tmp, args.rows, args.repeats) + "\n"
            write_section(f"serving {host_key()}", body)
            print(body)


if __name__ == "__main__":
    main()
