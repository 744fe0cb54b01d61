"""Pretraining training throughput on CPU: kbert `BertPretrainer` vs HF PyTorch vs keras-hub's masked LM.

`--model bert` (the default): preset `mini` (4 layers, hidden 256, 4 heads, intermediate 1024, vocabulary
30,522). `--model albert`: an ALBERT encoder of `--preset` (ALBERT's presets: embeddings 128, one shared block,
vocabulary 30,000, gelu_new, no dropout), its sentence-order objective. Sequence length 128, batch 32, at most
20 predictions per sequence, AdamW (learning rate 1e-4, weight decay 0.01). Every implementation trains on the
same synthetic masked batches, one optimizer step per batch, in interleaved rounds so that machine noise hits
each alike; compilation and warm-up steps are not timed.

- kbert: `BertPretrainer(BertEncoder.from_preset("mini"), objective="nsp")` (ALBERT:
  `BertPretrainer(AlbertEncoder.from_preset(preset), objective="sop")`) compiled with
  `kbert.optim.create_optimizer` (BERT's recipe: AdamW, no decay on LayerNorm/bias, linear
  warmup/decay, global-norm clipping at 1.0), trained with `train_on_batch` on the feature dicts of
  `kbert.pretraining_data.pretraining_feature_spec`; plain `tf.function`, XLA, and mixed_bfloat16.
- HF PyTorch `transformers.BertForPreTraining` (`AlbertForPreTraining`), same shapes, `torch.optim.AdamW`;
  its MLM decoder runs at every position (labels are -100 except at the masked ones).
- keras-hub `BertMaskedLM` (`AlbertMaskedLM`) on a `BertBackbone` (`AlbertBackbone`) of the same size, no
  preprocessor, plain, XLA and (with --bf16) mixed_bfloat16, with `keras.optimizers.AdamW`; it trains the
  masked LM only (no NSP or SOP head).

    python -m benchmarks.pretraining [--rounds 3] [--steps 2] [--bf16] [--ablations] [--no-write]
    python -m benchmarks.pretraining --model albert [--preset base] [--bf16] [--no-write]
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import statistics
import time
from collections.abc import Callable
from unittest import mock

import kbert  # sets TF_ENABLE_ONEDNN_OPTS=1; must come before TensorFlow

import keras
import numpy as np
import tensorflow as tf

from benchmarks.common.report import command_line, host_line, load_average, publish
from kbert.models import bert_pretrainer
from kbert.pretraining_data.dynamic_masking import pretraining_feature_spec
from kbert.optim import create_optimizer



@dataclasses.dataclass(frozen=True)
class Family:
    """What a family's pretraining benchmark needs: kbert's encoder and objective, its peers' classes, special ids."""

    encoder: str  # kbert's encoder class; its `config_class` gives the preset's shape
    objective: str  # `BertPretrainer`'s sentence objective
    hub_backbone: str  # keras_hub.models' backbone and masked LM
    hub_masked_lm: str
    hf_config: str  # transformers' config, pretraining model, and its sentence-label argument
    hf_model: str
    hf_sentence_label: str
    cls: int  # [CLS], [SEP], [MASK] ids in the family's vocabulary
    sep: int
    mask: int


FAMILIES = {
    "bert": Family("BertEncoder", "nsp", "BertBackbone", "BertMaskedLM", "BertConfig", "BertForPreTraining",
                   "next_sentence_label", cls=101, sep=102, mask=103),
    "albert": Family("AlbertEncoder", "sop", "AlbertBackbone", "AlbertMaskedLM", "AlbertConfig",
                     "AlbertForPreTraining", "sentence_order_label", cls=2, sep=3, mask=4),
}


def preset_config(family: str = "bert", preset: str = "mini") -> kbert.BertConfig:
    """The config of `preset` of `family` (its encoder's `config_class`)."""
    return getattr(kbert, FAMILIES[family].encoder).config_class.from_preset(preset)


def make_batches(count: int, batch: int, seq: int, preds: int, seed: int = 0,
                 family: str = "bert", preset: str = "mini") -> list[dict[str, np.ndarray]]:
    """Synthetic masked batches in kbert's feature layout (`pretraining_feature_spec`), `family`'s special ids and
    the vocabulary of its `preset`.

    Lengths are uniform in [3/4 seq, seq] (the rest is padding); 15% of the non-special tokens, at most
    `preds`, are masked (80% [MASK], 10% random, 10% kept), as BERT's recipe.
    """
    rng = np.random.default_rng(seed)
    special, vocab = FAMILIES[family], preset_config(family, preset).vocab_size
    spec = pretraining_feature_spec(seq, preds, batch_dims=(batch,))
    batches = []
    for _ in range(count):
        f = {name: np.zeros(s.shape, s.dtype.as_numpy_dtype) for name, s in spec.items()}
        for row in range(batch):
            length = int(rng.integers(seq * 3 // 4, seq + 1))
            split = int(rng.integers(2, length - 2))
            ids = rng.integers(1000, vocab, length)
            ids[0], ids[split], ids[length - 1] = special.cls, special.sep, special.sep
            candidates = [i for i in range(length) if ids[i] not in (special.cls, special.sep)]
            count_masked = min(preds, max(1, round(0.15 * len(candidates))))
            positions = np.sort(rng.choice(candidates, count_masked, replace=False))
            f["masked_ids"][row, :count_masked] = ids[positions]
            f["masked_positions"][row, :count_masked] = positions
            f["masked_weights"][row, :count_masked] = 1.0
            draw = rng.random(count_masked)
            ids[positions[draw < 0.8]] = special.mask
            random_ones = positions[(draw >= 0.8) & (draw < 0.9)]
            ids[random_ones] = rng.integers(1000, vocab, len(random_ones))
            f["token_ids"][row, :length] = ids
            f["segment_ids"][row, split + 1:length] = 1
            f["padding_mask"][row, :length] = True
            f["next_sentence_label"][row] = int(rng.integers(0, 2))
        batches.append(f)
    return batches


# === Runners: each returns a `step(batch_index)` doing one synchronous optimizer step ===


def keras_loss_and_hits(masked_ids, logits, masked_weights):
    """`masked_lm_loss_and_hits` from Keras' ops, outside any XLA cluster: the ablation that measures it."""
    masked_ids, masked_weights = tf.cast(masked_ids, tf.int32), tf.cast(masked_weights, tf.float32)
    per_token = keras.losses.sparse_categorical_crossentropy(masked_ids, logits, from_logits=True)
    loss = tf.reduce_sum(per_token * masked_weights) / tf.maximum(tf.reduce_sum(masked_weights), 1.0)
    return loss, tf.cast(tf.equal(tf.argmax(logits, axis=-1, output_type=tf.int32), masked_ids), tf.float32)


class KerasLossPretrainer(kbert.BertPretrainer):
    """The pretrainer with its masked-LM loss and hits traced from `keras_loss_and_hits`."""

    def compute_loss(self, *args, **kwargs):
        with mock.patch.object(bert_pretrainer, "masked_lm_loss_and_hits", keras_loss_and_hits):
            return super().compute_loss(*args, **kwargs)


def use_keras_hub_call(encoder: kbert.BertEncoder) -> None:
    """The ablation of kbert's block: the same layers and weights, run by keras-hub's `call`."""
    import keras_hub

    for blocks in encoder.layer_blocks():
        for block in blocks:
            block.__class__ = keras_hub.layers.TransformerEncoder


def kbert_runner(batches, *, jit_compile: bool, dtype: str | None = None, steps_total: int = 10_000,
                 clipnorm: float | None = 1.0, objective: str | None = None, keras_loss: bool = False,
                 keras_hub_blocks: bool = False, family: str = "bert", preset: str = "mini",
                 **preset_overrides) -> Callable[[int], None]:
    encoder = getattr(kbert, FAMILIES[family].encoder).from_preset(preset, dtype=dtype, **preset_overrides)
    objective = FAMILIES[family].objective if objective is None else objective
    if keras_hub_blocks:
        use_keras_hub_call(encoder)
    model = (KerasLossPretrainer if keras_loss else kbert.BertPretrainer)(encoder, objective=objective)
    optimizer = create_optimizer(1e-4, num_train_steps=steps_total, warmup_steps=steps_total // 10,
                                 weight_decay=0.01, clipnorm=clipnorm)
    model.compile(optimizer=optimizer, jit_compile=jit_compile)
    features = [{k: tf.constant(v) for k, v in b.items()} for b in batches]
    return lambda i: model.train_on_batch(features[i % len(features)])


def keras_hub_runner(batches, *, jit_compile: bool, dtype: str | None = None, family: str = "bert",
                     preset: str = "mini") -> Callable[[int], None]:
    import keras_hub

    c, names = preset_config(family, preset), FAMILIES[family]
    shape = dict(vocabulary_size=c.vocab_size, num_layers=c.num_hidden_layers, num_heads=c.num_attention_heads,
                 hidden_dim=c.hidden_size, intermediate_dim=c.intermediate_size, dropout=c.hidden_dropout_prob,
                 max_sequence_length=c.max_position_embeddings, num_segments=c.type_vocab_size, dtype=dtype)
    if family == "albert":
        shape.update(embedding_dim=c.embedding_size, num_groups=c.num_hidden_groups,
                     num_inner_repetitions=c.inner_group_num)
    backbone = getattr(keras_hub.models, names.hub_backbone)(**shape)
    model = getattr(keras_hub.models, names.hub_masked_lm)(backbone, preprocessor=None)
    model.compile(optimizer=keras.optimizers.AdamW(learning_rate=1e-4, weight_decay=0.01, epsilon=1e-6),
                  jit_compile=jit_compile)
    data = [({"token_ids": tf.constant(b["token_ids"]), "segment_ids": tf.constant(b["segment_ids"]),
              "padding_mask": tf.constant(b["padding_mask"]), "mask_positions": tf.constant(b["masked_positions"])},
             tf.constant(b["masked_ids"]), tf.constant(b["masked_weights"])) for b in batches]

    def step(i: int) -> None:
        x, y, w = data[i % len(data)]
        model.train_on_batch(x, y, sample_weight=w)

    return step


def torch_runner(batches, family: str = "bert", preset: str = "mini") -> Callable[[int], None]:
    import torch
    import transformers

    torch.manual_seed(0)
    names = FAMILIES[family]
    config = getattr(transformers, names.hf_config)(**preset_config(family, preset).to_dict())
    model = getattr(transformers, names.hf_model)(config).train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.01, eps=1e-6)
    data = []
    for b in batches:
        labels = np.full(b["token_ids"].shape, -100, np.int64)
        rows, cols = np.nonzero(b["masked_weights"])
        labels[rows, b["masked_positions"][rows, cols]] = b["masked_ids"][rows, cols]
        data.append({
            "input_ids": torch.tensor(b["token_ids"], dtype=torch.long),
            "token_type_ids": torch.tensor(b["segment_ids"], dtype=torch.long),
            "attention_mask": torch.tensor(b["padding_mask"], dtype=torch.long),
            "labels": torch.tensor(labels),
            names.hf_sentence_label: torch.tensor(b["next_sentence_label"], dtype=torch.long),
        })

    def step(i: int) -> None:
        optimizer.zero_grad(set_to_none=True)
        loss = model(**data[i % len(data)]).loss
        loss.backward()
        optimizer.step()
        loss.item()

    return step


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", choices=sorted(FAMILIES), default="bert", help="the encoder family")
    parser.add_argument("--preset", default="mini", help="the family's preset (its config's presets)")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds (median is reported)")
    parser.add_argument("--steps", type=int, default=2, help="optimizer steps timed per round and runner")
    parser.add_argument("--warmup", type=int, default=1, help="untimed steps after compilation")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--sequence-length", type=int, default=128)
    parser.add_argument("--max-predictions", type=int, default=20)
    parser.add_argument("--bf16", action="store_true",
                        help="also time kbert (tf.function, XLA) and keras-hub under mixed_bfloat16; slow on CPUs "
                             "without AVX512-BF16/AMX")
    parser.add_argument("--ablations", action="store_true",
                        help="also time kbert variants that isolate costs (no clipping, tanh GELU, no NSP, ...)")
    parser.add_argument("--only", default="", help="comma-separated substrings: run only matching runners")
    parser.add_argument("--no-write", action="store_true", help="print only; leave BENCHMARKS.md alone")
    args = parser.parse_args()

    import torch

    torch.set_num_threads(2)
    load_start = load_average()
    batch, seq, preds = args.batch_size, args.sequence_length, args.max_predictions
    family, names, config = args.model, FAMILIES[args.model], preset_config(args.model, args.preset)
    batches = make_batches(4, batch, seq, preds, family=family, preset=args.preset)
    sentence_task = names.objective.upper()
    hf = f"HF PyTorch {names.hf_model}"
    hub = f"keras-hub {names.hub_masked_lm}"

    def kbert_factory(**options) -> Callable[[], Callable[[int], None]]:
        return lambda: kbert_runner(batches, family=family, preset=args.preset, **options)

    def hub_factory(**options) -> Callable[[], Callable[[int], None]]:
        return lambda: keras_hub_runner(batches, family=family, preset=args.preset, **options)

    factories: dict[str, Callable[[], Callable[[int], None]]] = {
        "kbert BertPretrainer (tf.function)": kbert_factory(jit_compile=False),
        "kbert BertPretrainer (XLA)": kbert_factory(jit_compile=True),
    }
    if args.bf16:
        factories["kbert BertPretrainer (mixed_bfloat16, tf.function)"] = kbert_factory(
            jit_compile=False, dtype="mixed_bfloat16")
        factories["kbert BertPretrainer (mixed_bfloat16, XLA)"] = kbert_factory(
            jit_compile=True, dtype="mixed_bfloat16")
    if args.ablations:  # each removes one cost from the plain tf.function step
        factories.update({
            "ablation: kbert, no gradient clipping": kbert_factory(jit_compile=False, clipnorm=None),
            "ablation: kbert, tanh GELU": kbert_factory(jit_compile=False, hidden_act="gelu_approximate"),
            f"ablation: kbert, objective none (no {sentence_task})": kbert_factory(jit_compile=False, objective="none"),
            "ablation: kbert, dropout 0": kbert_factory(
                jit_compile=False, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0),
            # adds a cost back: the masked-LM loss and accuracy as Keras' ops, not one XLA cluster
            "ablation: kbert, Keras' loss and accuracy": kbert_factory(jit_compile=False, keras_loss=True),
        })
        factories["ablation: kbert, keras-hub's block call"] = kbert_factory(jit_compile=False, keras_hub_blocks=True)
        if args.bf16:
            factories["ablation: kbert, Keras' loss and accuracy (mixed_bfloat16)"] = kbert_factory(
                jit_compile=False, dtype="mixed_bfloat16", keras_loss=True)
            factories["ablation: kbert, keras-hub's block call (mixed_bfloat16)"] = kbert_factory(
                jit_compile=False, dtype="mixed_bfloat16", keras_hub_blocks=True)
    factories.update({
        hf: lambda: torch_runner(batches, family=family, preset=args.preset),
        f"{hub} (tf.function)": hub_factory(jit_compile=False),
        f"{hub} (XLA)": hub_factory(jit_compile=True),
    })
    if args.bf16:  # the same policy for the peer, so "keras-hub's best" has every option kbert has
        factories[f"{hub} (mixed_bfloat16, tf.function)"] = hub_factory(jit_compile=False, dtype="mixed_bfloat16")
    if args.only:
        wanted = [s.strip() for s in args.only.split(",") if s.strip()]
        factories = {n: f for n, f in factories.items() if any(w in n for w in wanted)}

    runners, setup_s = {}, {}
    for name, factory in factories.items():
        start = time.perf_counter()
        runners[name] = factory()
        for i in range(1 + args.warmup):  # the first step traces and compiles
            runners[name](i)
        setup_s[name] = time.perf_counter() - start
        print(f"set up {name}: {setup_s[name]:.1f} s (build, compile, {1 + args.warmup} steps)", flush=True)

    rates: dict[str, list[float]] = {name: [] for name in runners}
    for round_index in range(args.rounds):
        for name, step in runners.items():
            start = time.perf_counter()
            for i in range(args.steps):
                step(i)
            rates[name].append(args.steps * batch / (time.perf_counter() - start))
        print(f"round {round_index + 1}: " + "; ".join(f"{n} {r[-1]:.1f}" for n, r in rates.items()), flush=True)

    median = {name: statistics.median(r) for name, r in rates.items()}
    hub_rows = [n for n in median if n.startswith("keras-hub")]
    hub_best = max(hub_rows, key=median.get) if hub_rows else None
    kbert_rows = [n for n in median if n.startswith("kbert")]
    kbert_best = max(kbert_rows, key=median.get) if kbert_rows else None

    def ratio(name: str, peer: str | None) -> str:
        return f"{median[name] / median[peer]:.2f}x" if peer in median else "-"

    if family == "bert":
        shape = f"{args.preset}: {config.num_hidden_layers} layers, hidden {config.hidden_size}"
    else:
        shape = (f"ALBERT {args.preset}: {config.num_hidden_layers} layers sharing {config.num_hidden_groups} "
                 f"block(s), hidden {config.hidden_size}, embeddings {config.embedding_size}")
    lines = [f"## Pretraining training throughput ({shape}; sequence {seq}, batch {batch}, CPU)", ""]
    if kbert_best and hub_best:
        ratio_hub = median[kbert_best] / median[hub_best]
        lines.append(f"**Best kbert / keras-hub's best: {ratio_hub:.2f}x** (goal >= 1.3x: "
                     f"{'met' if ratio_hub >= 1.3 else 'not met'}): {kbert_best} {median[kbert_best] / batch:.3f} "
                     f"steps/s against {hub_best} {median[hub_best] / batch:.3f}"
                     + (f"; {median[kbert_best] / median[hf]:.2f}x HF PyTorch (goal >= 2x)." if hf in median else ".")
                     + f" keras-hub trains the masked LM only (no {sentence_task} head).")
        lines.append("")
    lines += [
        f"Command: `{command_line()}`  ",
        f"Host: {host_line()}; load average (1/5/15 min) {load_start} at the start, {load_average()} at the end; "
        f"TF {tf.__version__}, Keras {keras.__version__}, torch {torch.__version__} ({torch.get_num_threads()} "
        f"threads), TF_ENABLE_ONEDNN_OPTS={os.environ.get('TF_ENABLE_ONEDNN_OPTS')}; {time.strftime('%Y-%m-%d')}.  ",
        f"Settings: vocabulary {config.vocab_size:,}, {config.num_attention_heads} heads, intermediate "
        f"{config.intermediate_size}, {config.hidden_act}, {preds} predictions per sequence (15% of tokens), lengths "
        f"{seq * 3 // 4}-{seq} with padding, AdamW lr 1e-4 weight decay 0.01, dropout {config.hidden_dropout_prob}, "
        f"one optimizer step per batch via `train_on_batch` / `loss.backward(); opt.step()`. Median of "
        f"{args.rounds} interleaved rounds of {args.steps} steps, after compilation and {args.warmup} warm-up "
        "steps.  ",
        "kbert uses `create_optimizer` (BERT's recipe, with global-norm clipping 1.0 and no decay on "
        f"LayerNorm/bias) and trains MLM + {sentence_task}; keras-hub trains MLM only with plain AdamW; HF trains "
        f"MLM + {sentence_task} with plain AdamW and runs its vocabulary decoder at all {seq} positions.",
        "",
        "| implementation | sequences/s | steps/s | per round | vs HF PyTorch | vs keras-hub best | set-up s |",
        "|---|---:|---:|---|---:|---:|---:|",
    ]
    for name in median:
        spread = ", ".join(f"{r:.1f}" for r in rates[name])
        lines.append(f"| {name} | {median[name]:.1f} | {median[name] / batch:.3f} | {spread} | {ratio(name, hf)} "
                     f"| {ratio(name, hub_best)} | {setup_s[name]:.0f} |")
    if family == "bert":
        lines += ["", "Measured before kbert existed (issue text, same machine type): HF PyTorch 8.3 seq/s; "
                  "keras-hub 16.6, 18.7 with XLA, 25.4 with TF_ENABLE_ONEDNN_OPTS=1."]
    section = "pretraining_training" if family == "bert" else f"pretraining_training {family} {args.preset}"
    publish(section, "\n".join(lines), write=not args.no_write)


if __name__ == "__main__":
    main()
