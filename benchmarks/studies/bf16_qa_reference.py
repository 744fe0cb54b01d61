"""How often does bf16 change an extractive-QA answer, in kbert and in PyTorch's autocast, on one model?

A kbert QA model directory (`kbert finetune qa`, e.g. the one `benchmarks.bf16_quality --work DIR` trains)
is copied into transformers' `BertForQuestionAnswering`: the encoder through `save_pretrained(format="hf")`,
and the span head's two units by hand. The same SQuAD dev windows (articles 40-47, as bf16_quality scores)
then run four ways: kbert in float32 and under `mixed_bfloat16`, and PyTorch in float32 and under
`torch.autocast(bfloat16)`. kbert's span decoding reads all four. Each precision's answers are compared with
its own float32 answers. PyTorch's agreement shows what bf16 products allow on this model: the
goal of 99% is not kbert's alone to meet.

    python -m benchmarks.studies.bf16_qa_reference --model-dir DIR [--dev-rows 800]
"""

from __future__ import annotations

import argparse
import pathlib
import tempfile

import numpy as np

from benchmarks.common.finetune_tasks import read_squad_questions


def kbert_logits(model, features, batch_size: int = 64) -> tuple[np.ndarray, np.ndarray]:
    import tensorflow as tf

    run = tf.function(lambda x: model(x, training=False), reduce_retracing=True)
    start, end = [], []
    for i in range(0, len(features), batch_size):
        batch = {k: tf.constant(v[i:i + batch_size], tf.int32) for k, v in features.inputs().items()}
        out = run(batch)
        start.append(out["start_logits"].numpy().astype("float32"))
        end.append(out["end_logits"].numpy().astype("float32"))
    return np.concatenate(start), np.concatenate(end)


def torch_model(model, directory: pathlib.Path):
    """transformers' BertForQuestionAnswering holding the kbert QA model's weights."""
    import torch
    import transformers

    import kbert

    kbert.save_pretrained(model.encoder, directory, format="hf")
    reference = transformers.BertForQuestionAnswering.from_pretrained(str(directory)).eval()
    kernel, bias = model.output_dense.get_weights()  # (hidden, 2) and (2,): start and end
    with torch.no_grad():
        reference.qa_outputs.weight.copy_(torch.tensor(kernel.T))
        reference.qa_outputs.bias.copy_(torch.tensor(bias))
    return reference


def torch_logits(reference, features, autocast: bool, batch_size: int = 64) -> tuple[np.ndarray, np.ndarray]:
    import torch

    start, end = [], []
    for i in range(0, len(features), batch_size):
        mask = torch.tensor(features.padding_mask[i:i + batch_size], dtype=torch.long)
        inputs = dict(input_ids=torch.tensor(features.token_ids[i:i + batch_size], dtype=torch.long),
                      token_type_ids=torch.tensor(features.segment_ids[i:i + batch_size], dtype=torch.long),
                      attention_mask=mask)
        with torch.inference_mode(), torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
            out = reference(**inputs)
        for logits, into in ((out.start_logits, start), (out.end_logits, end)):
            into.append(logits.float().masked_fill(~mask.bool(), -1e4).numpy())  # as kbert's head pads
    return np.concatenate(start), np.concatenate(end)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model-dir", required=True, type=pathlib.Path, help="a kbert QA model directory")
    parser.add_argument("--dev-rows", type=int, default=800)
    args = parser.parse_args()

    import torch

    import kbert
    from kbert.export.model_precision import with_precision
    from kbert.metrics import squad_evaluate
    from kbert.tasks.qa_features import build_qa_features
    from kbert.tasks.span_decoding import decode_answers

    model = kbert.load_model(args.model_dir)
    examples = read_squad_questions((40, 48), args.dev_rows)
    features = build_qa_features(examples, model.tokenizer, model.preprocessor.sequence_length,
                                 model.task.doc_stride, 64)
    with tempfile.TemporaryDirectory() as tmp:
        reference = torch_model(model, pathlib.Path(tmp))
    logits = {
        "kbert float32": kbert_logits(model, features),
        "kbert bfloat16": kbert_logits(with_precision(model, "bfloat16"), features),
        "PyTorch float32": torch_logits(reference, features, autocast=False),
        "PyTorch bf16 autocast": torch_logits(reference, features, autocast=True),
    }
    answers = {name: decode_answers(examples, features, *pair) for name, pair in logits.items()}

    def agreement(a: str, b: str) -> float:
        return 100 * float(np.mean([answers[a][e["id"]] == answers[b][e["id"]] for e in examples]))

    print(f"{len(examples)} SQuAD dev questions, {len(features)} windows; model {args.model_dir}")
    print("| answers | agree with float32 | F1 |\n|---|---:|---:|")
    for name, own in (("kbert float32", "PyTorch float32"), ("kbert bfloat16", "kbert float32"),
                      ("PyTorch bf16 autocast", "PyTorch float32")):
        f1 = squad_evaluate(examples, answers[name])["f1"]
        print(f"| {name} (against {own}) | {agreement(name, own):.2f}% | {f1:.2f} |")


if __name__ == "__main__":
    main()
