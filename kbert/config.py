"""BERT configurations: presets, and JSON in Google's and Hugging Face's field names.

One name per concept: the field names below are Google's `bert_config.json` names, and the same names are
the `BertEncoder` constructor arguments and the CLI flags. Hugging Face's `config.json` uses the same names
for every field kbert needs, so one reader handles both.
"""

from __future__ import annotations

import dataclasses
import json
import os
from typing import Any

import kbert.file_io as file_io

# The two dropout rates: training settings kept in the config, not part of the function the weights compute.
DROPOUT_FIELDS = ("hidden_dropout_prob", "attention_probs_dropout_prob")

# The feed-forward activations a config may name (Google's and Hugging Face's `hidden_act`):
# `kbert.layers.activations` maps each to its Keras function.
HIDDEN_ACTS = ("gelu", "gelu_new", "gelu_pytorch_tanh", "gelu_fast", "gelu_approximate", "relu", "tanh")


def check_hidden_act(name: str) -> str:
    """`name` if a config may name it as `hidden_act`, else ValueError listing `HIDDEN_ACTS`."""
    if name not in HIDDEN_ACTS:
        raise ValueError(f"Unsupported hidden_act {name!r}; use one of {', '.join(HIDDEN_ACTS)}")
    return name


# The `model_type`s of Hugging Face configs that kbert reads: those that compute BERT's function. Another family
# (ALBERT, RoBERTa, ...) has other weights or conventions, and loading it as BERT would compute a wrong function.
MODEL_TYPES = ("bert",)

# Hidden sizes and depths from Google's BERT release (Turc et al. 2019 for the small models).
# Heads are hidden / 64; the intermediate (feed-forward) size is 4 x hidden.
PRESETS: dict[str, tuple[int, int]] = {
    "tiny": (2, 128),
    "mini": (4, 256),
    "small": (4, 512),
    "medium": (8, 512),
    "base": (12, 768),
    "large": (24, 1024),
}


@dataclasses.dataclass
class BertConfig:
    """The shape of a BERT encoder.

    Args:
        vocab_size: int. Number of WordPiece tokens.
        hidden_size: int. Width H of every token vector.
        num_hidden_layers: int. Number L of transformer blocks.
        num_attention_heads: int. Heads A; `hidden_size` must divide by it.
        intermediate_size: int. Width of the feed-forward layer (4H in BERT).
        hidden_act: str. Feed-forward activation, by the config file's name: "gelu" is the exact (erf)
            GELU; "gelu_new", "gelu_pytorch_tanh", "gelu_fast" (Hugging Face) and "gelu_approximate"
            are its tanh approximation; "relu", "tanh". The name is kept, so a checkpoint written back
            says what it said when read.
        hidden_dropout_prob: float. Dropout on embeddings and on each sublayer's output.
        attention_probs_dropout_prob: float. Dropout on the attention probabilities.
        max_position_embeddings: int. Longest input the learned position table holds.
        type_vocab_size: int. Number of segments (2: sentence A and sentence B).
        initializer_range: float. Standard deviation of the initializers: a normal cut at 2 std for the
            encoder and pretraining heads (as Google's BERT), an uncut normal for fine-tuning heads.
        layer_norm_eps: float. LayerNorm epsilon (1e-12 in BERT).
    """

    vocab_size: int = 30522
    hidden_size: int = 768
    num_hidden_layers: int = 12
    num_attention_heads: int = 12
    intermediate_size: int = 3072
    hidden_act: str = "gelu"
    hidden_dropout_prob: float = 0.1
    attention_probs_dropout_prob: float = 0.1
    max_position_embeddings: int = 512
    type_vocab_size: int = 2
    initializer_range: float = 0.02
    layer_norm_eps: float = 1e-12

    def __post_init__(self) -> None:
        if self.hidden_size % self.num_attention_heads:
            raise ValueError(
                f"hidden_size {self.hidden_size} is not divisible by "
                f"num_attention_heads {self.num_attention_heads}"
            )
        check_hidden_act(self.hidden_act)

    @classmethod
    def from_preset(cls, name: str, **overrides: Any) -> "BertConfig":
        """The config of a named preset (`tiny`, `mini`, `small`, `medium`, `base`, `large`)."""
        if name not in PRESETS:
            raise ValueError(f"Unknown preset {name!r}; choose one of {sorted(PRESETS)}")
        layers, hidden = PRESETS[name]
        fields = dict(
            num_hidden_layers=layers,
            hidden_size=hidden,
            num_attention_heads=hidden // 64,
            intermediate_size=4 * hidden,
        )
        fields.update(overrides)
        return cls(**fields)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "BertConfig":
        """Reads Google's `bert_config.json` or HF's `config.json` fields; other fields are ignored.

        Raises:
            ValueError: a `model_type` other than `MODEL_TYPES` (a config of another family), or a missing field.
        """
        model_type = data.get("model_type", "bert")
        if model_type not in MODEL_TYPES:
            raise ValueError(f"model_type {model_type!r} is not a model kbert reads: it reads {', '.join(MODEL_TYPES)} "
                             f"(Hugging Face `BertModel` directories, Google's BERT and kbert checkpoints)")
        known = {f.name for f in dataclasses.fields(cls)}
        fields = {k: v for k, v in data.items() if k in known}
        if "layer_norm_eps" not in data:
            fields["layer_norm_eps"] = 1e-12  # Google's configs do not store it.
        missing = {"vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads"} - set(fields)
        if missing:
            raise ValueError(f"BERT config lacks required fields {sorted(missing)}")
        return cls(**fields)

    @classmethod
    def from_json_file(cls, path: str | os.PathLike) -> "BertConfig":
        try:
            data = json.loads(file_io.read_text(path))
        except json.JSONDecodeError as e:
            raise ValueError(f"{os.fspath(path)} is not valid JSON: {e}") from e
        return cls.from_dict(data)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def to_json_file(self, path: str | os.PathLike, **extra: Any) -> None:
        file_io.write_json(path, {**self.to_dict(), **extra}, sort_keys=True)
