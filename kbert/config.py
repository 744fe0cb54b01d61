"""Encoder configurations of the BERT family (BERT, ALBERT, RoBERTa, DistilBERT): presets, and JSON in Google's and
Hugging Face's field names.

One name per concept: the field names below are Google's `bert_config.json` names, and the same names are
the encoders' constructor arguments and the CLI flags. Hugging Face's `config.json` uses the same names
for every field kbert needs, so one reader handles both; DistilBERT's alone has names of its own (`dim`,
`n_layers`, ...), which `DistilBertConfig` reads and writes (`hf_fields`) and renames nowhere else. A config's
`model_type` (Hugging Face's name for the family) picks its class: `config_from_dict` reads any of them.
"""

from __future__ import annotations

import dataclasses
import json
import os
from typing import Any, ClassVar

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


# Hidden sizes and depths from Google's BERT release (Turc et al. 2019 for the small models): (layers, hidden)
# or (layers, hidden, heads). Heads are hidden / 64 unless given; the intermediate (feed-forward) size is 4 x hidden.
PRESETS: dict[str, tuple[int, ...]] = {
    "tiny": (2, 128),
    "mini": (4, 256),
    "small": (4, 512),
    "medium": (8, 512),
    "base": (12, 768),
    "large": (24, 1024),
}


def _read_json(path: str | os.PathLike) -> dict[str, Any]:
    try:
        return json.loads(file_io.read_text(path))
    except json.JSONDecodeError as e:
        raise ValueError(f"{os.fspath(path)} is not valid JSON: {e}") from e


@dataclasses.dataclass
class BertConfig:
    """The shape of a BERT encoder; the base of ALBERT's and RoBERTa's configs.

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

    Example:
    >>> config = BertConfig.from_preset("mini", vocab_size=100)
    >>> config.num_hidden_layers, config.hidden_size, config.num_attention_heads, config.model_type
    (4, 256, 4, 'bert')
    """

    # Hugging Face's name of the family, written to every config file; `config_from_dict` dispatches on it.
    model_type: ClassVar[str] = "bert"
    family: ClassVar[str] = "BERT"
    presets: ClassVar[dict[str, tuple[int, ...]]] = PRESETS
    # Whether the family's released checkpoints hold the pooler (DistilBERT's never do: its pooler starts fresh).
    checkpoint_pooler: ClassVar[bool] = True

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

    @property
    def max_sequence_length(self) -> int:
        """The longest input the position table serves."""
        return self.max_position_embeddings

    @classmethod
    def from_preset(cls, name: str, **overrides: Any) -> "BertConfig":
        """The config of a named preset of the family (`cls.presets`: BERT's are tiny, mini, small, medium,
        base, large)."""
        if name not in cls.presets:
            raise ValueError(f"Unknown {cls.family} preset {name!r}; choose one of {sorted(cls.presets)}")
        layers, hidden, *heads = cls.presets[name]
        fields = dict(
            num_hidden_layers=layers,
            hidden_size=hidden,
            num_attention_heads=heads[0] if heads else hidden // 64,
            intermediate_size=4 * hidden,
        )
        fields.update(overrides)
        return cls(**fields)

    @classmethod
    def split_kwargs(cls, kwargs: dict[str, Any]) -> tuple["BertConfig", dict[str, Any]]:
        """(the config made of `kwargs`' config fields, the other arguments): an encoder's constructor arguments
        are its config's fields, then Keras' own (`name`, `trainable`)."""
        known = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in kwargs.items() if k in known}), {k: v for k, v in kwargs.items()
                                                                         if k not in known}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "BertConfig":
        """Reads Google's `bert_config.json` or HF's `config.json` fields; other fields are ignored.

        A config without `model_type` (Google's) is read as this class's family.

        Raises:
            ValueError: a config of another family (naming both), a `model_type` kbert does not read (listing
                `MODEL_TYPES`), or a missing field.
        """
        model_type = data.get("model_type", cls.model_type)
        if model_type != cls.model_type:
            check_model_type(model_type)
            other = CONFIG_CLASSES[model_type]
            raise ValueError(f"model_type {model_type!r} is {other.family}'s, not {cls.family}'s: {cls.__name__} does "
                             f"not read it; {other.__name__} (or kbert.config.config_from_dict) does")
        known = {f.name for f in dataclasses.fields(cls)}
        fields = {k: v for k, v in data.items() if k in known}  # a field Google's configs lack keeps its default
        missing = {"vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads"} - set(fields)
        if missing:
            raise ValueError(f"{cls.family} config lacks required fields {sorted(missing)}")
        return cls(**fields)

    @classmethod
    def from_json_file(cls, path: str | os.PathLike) -> "BertConfig":
        return cls.from_dict(_read_json(path))

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def hf_fields(self) -> dict[str, Any]:
        """The fields as Hugging Face's `config.json` of the family names them: BERT's names, but for kbert's own
        alias of the tanh GELU, which transformers calls "gelu_pytorch_tanh"."""
        fields = self.to_dict()
        if fields["hidden_act"] == "gelu_approximate":
            fields["hidden_act"] = "gelu_pytorch_tanh"
        return fields

    def to_json_file(self, path: str | os.PathLike, **extra: Any) -> None:
        """Writes the fields and `model_type` (which `config_from_dict` reads back), and `extra` fields."""
        file_io.write_json(path, {"model_type": self.model_type, **self.to_dict(), **extra}, sort_keys=True)


# ALBERT's released sizes (Lan et al. 2019; Hugging Face's albert-*-v2), and BERT's small ones.
ALBERT_PRESETS: dict[str, tuple[int, ...]] = {
    "tiny": (2, 128),
    "mini": (4, 256),
    "small": (4, 512),
    "base": (12, 768),
    "large": (24, 1024),
    "xlarge": (24, 2048, 16),
    "xxlarge": (12, 4096),
}


@dataclasses.dataclass
class AlbertConfig(BertConfig):
    """The shape of an ALBERT encoder (Lan et al. 2019): BERT's fields, and factorized embeddings and shared layers.

    Args:
        embedding_size: int. Width E of the embedding tables (128), projected to `hidden_size` before the first
            block.
        num_hidden_groups: int. Groups of blocks with their own weights; hidden layer i runs group
            int(i / (num_hidden_layers / num_hidden_groups)) (1: every layer shares one group's weights).
        inner_group_num: int. Blocks in each group, run one after the other in every hidden layer.
        **BertConfig's fields**, with ALBERT's defaults: vocab_size 30000, hidden_act "gelu_new", and no dropout
            (ALBERT v2's release: dropout hurt its pretraining).

    Example:
    >>> config = AlbertConfig.from_preset("base")
    >>> config.embedding_size, config.vocab_size, config.num_hidden_groups, config.model_type
    (128, 30000, 1, 'albert')
    """

    model_type: ClassVar[str] = "albert"
    family: ClassVar[str] = "ALBERT"
    presets: ClassVar[dict[str, tuple[int, ...]]] = ALBERT_PRESETS

    vocab_size: int = 30000
    hidden_act: str = "gelu_new"
    hidden_dropout_prob: float = 0.0
    attention_probs_dropout_prob: float = 0.0
    embedding_size: int = 128
    num_hidden_groups: int = 1
    inner_group_num: int = 1

    def __post_init__(self) -> None:
        super().__post_init__()
        for field in ("embedding_size", "num_hidden_groups", "inner_group_num"):
            if getattr(self, field) < 1:
                raise ValueError(f"ALBERT's {field} must be at least 1, got {getattr(self, field)}")


# RoBERTa's releases, and BERT's smaller shapes for models pretrained here.
ROBERTA_PRESETS: dict[str, tuple[int, ...]] = {**{name: PRESETS[name] for name in ("tiny", "mini", "small", "medium")},
                                               "base": (12, 768), "large": (24, 1024)}


@dataclasses.dataclass
class RobertaConfig(BertConfig):
    """The shape of a RoBERTa encoder (Liu et al. 2019): BERT's function, with positions counted after the padding id.

    Args:
        pad_token_id: int. The padding token's id (1). Real tokens take positions pad_token_id + 1, + 2, ...
            and padding tokens row pad_token_id, so the longest input is max_position_embeddings -
            pad_token_id - 1 tokens (512).
        **BertConfig's fields**, with RoBERTa's defaults: vocab_size 50265 (byte-level BPE),
            max_position_embeddings 514, type_vocab_size 1, layer_norm_eps 1e-5.

    Example:
    >>> config = RobertaConfig.from_preset("base")
    >>> config.vocab_size, config.max_sequence_length, config.model_type
    (50265, 512, 'roberta')
    """

    model_type: ClassVar[str] = "roberta"
    family: ClassVar[str] = "RoBERTa"
    presets: ClassVar[dict[str, tuple[int, ...]]] = ROBERTA_PRESETS

    vocab_size: int = 50265
    max_position_embeddings: int = 514
    type_vocab_size: int = 1
    layer_norm_eps: float = 1e-5
    pad_token_id: int = 1

    def __post_init__(self) -> None:
        super().__post_init__()
        if not 0 <= self.pad_token_id < self.max_position_embeddings - 1:
            raise ValueError(f"pad_token_id {self.pad_token_id} leaves no position for a token in "
                             f"max_position_embeddings {self.max_position_embeddings}")

    @property
    def max_sequence_length(self) -> int:
        return self.max_position_embeddings - self.pad_token_id - 1


# DistilBERT's release (6 layers of BERT-base's width), and BERT's smaller shapes for students trained here.
DISTILBERT_PRESETS: dict[str, tuple[int, ...]] = {
    **{name: PRESETS[name] for name in ("tiny", "mini", "small", "medium")}, "base": (6, 768)}
# Hugging Face's DistilBERT `config.json` names -> the same fields' names in kbert (Google's).
DISTILBERT_HF_FIELDS = {"dim": "hidden_size", "n_layers": "num_hidden_layers", "n_heads": "num_attention_heads",
                        "hidden_dim": "intermediate_size", "activation": "hidden_act",
                        "dropout": "hidden_dropout_prob", "attention_dropout": "attention_probs_dropout_prob"}


@dataclasses.dataclass
class DistilBertConfig(BertConfig):
    """The shape of a DistilBERT encoder (Sanh et al. 2019): BERT's function without segments, in half the layers.

    Hugging Face's `DistilBertConfig` names the fields its own way (`dim`, `n_layers`, `n_heads`, `hidden_dim`,
    `activation`, `dropout`, `attention_dropout`: `DISTILBERT_HF_FIELDS`); kbert keeps BERT's names everywhere and
    renames them only when reading or writing Hugging Face's `config.json` (`from_dict`, `hf_fields`).

    Args:
        type_vocab_size: int. 0: DistilBERT has no segment table, so `segment_ids` change nothing.
        **BertConfig's fields**, with DistilBERT's defaults: num_hidden_layers 6, type_vocab_size 0 (its LayerNorm
            epsilon is BERT's 1e-12, fixed in Hugging Face's code).

    Learned positions only: a config with `sinusoidal_pos_embds` true is refused by name.

    Example:
    >>> config = DistilBertConfig.from_dict({"model_type": "distilbert", "vocab_size": 30522, "dim": 768,
    ...                                      "n_layers": 6, "n_heads": 12, "hidden_dim": 3072})
    >>> config.hidden_size, config.num_hidden_layers, config.intermediate_size, config.type_vocab_size
    (768, 6, 3072, 0)
    >>> config.hf_fields()["dim"], config.hf_fields()["n_layers"]
    (768, 6)
    """

    model_type: ClassVar[str] = "distilbert"
    family: ClassVar[str] = "DistilBERT"
    presets: ClassVar[dict[str, tuple[int, ...]]] = DISTILBERT_PRESETS
    checkpoint_pooler: ClassVar[bool] = False

    num_hidden_layers: int = 6
    type_vocab_size: int = 0

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.type_vocab_size != 0:
            raise ValueError(f"DistilBERT has no segment table: type_vocab_size must be 0, got {self.type_vocab_size}")

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "DistilBertConfig":
        """Reads Hugging Face's DistilBERT `config.json` (its own field names) or kbert's (BERT's names).

        Raises:
            ValueError: as `BertConfig.from_dict`, and for `sinusoidal_pos_embds` true (fixed sinusoidal positions,
                which kbert does not build).
        """
        if data.get("sinusoidal_pos_embds"):
            raise ValueError("DistilBERT config sets sinusoidal_pos_embds true: kbert builds DistilBERT with learned "
                             "position embeddings only (sinusoidal_pos_embds false, as the released models)")
        return super().from_dict({DISTILBERT_HF_FIELDS.get(name, name): value for name, value in data.items()})

    def hf_fields(self) -> dict[str, Any]:
        """The fields under Hugging Face's DistilBERT names; its LayerNorm epsilon is fixed there, so another one has
        no name (ValueError)."""
        if self.layer_norm_eps != 1e-12:
            raise ValueError(f"Hugging Face's DistilBERT fixes LayerNorm epsilon 1e-12; this config's is "
                             f"{self.layer_norm_eps}")
        kbert_names = {kbert: hf for hf, kbert in DISTILBERT_HF_FIELDS.items()}
        fields = {kbert_names.get(name, name): value for name, value in super().hf_fields().items()
                  if name not in ("type_vocab_size", "layer_norm_eps")}
        return {**fields, "sinusoidal_pos_embds": False}


# model_type -> config class: the families kbert reads (`kbert.models.families` pairs each with its encoder).
CONFIG_CLASSES: dict[str, type[BertConfig]] = {cls.model_type: cls for cls in (BertConfig, AlbertConfig, RobertaConfig,
                                                                              DistilBertConfig)}
MODEL_TYPES = tuple(CONFIG_CLASSES)


def check_model_type(model_type: str) -> str:
    """`model_type` if kbert reads that family, else ValueError naming it and listing `MODEL_TYPES`."""
    if model_type not in CONFIG_CLASSES:
        raise ValueError(f"model_type {model_type!r} is not a model kbert reads: it reads {', '.join(MODEL_TYPES)} "
                         "(Hugging Face BertModel, AlbertModel, RobertaModel and DistilBertModel directories, Google's "
                         "BERT and kbert checkpoints)")
    return model_type


def config_from_dict(data: dict[str, Any]) -> BertConfig:
    """The config of the family `data["model_type"]` names (BERT without one, as Google's files), read from `data`.

    Example:
    >>> config_from_dict({"model_type": "albert", "vocab_size": 30, "hidden_size": 16, "num_hidden_layers": 2,
    ...                   "num_attention_heads": 2, "embedding_size": 8}).embedding_size
    8
    """
    return CONFIG_CLASSES[check_model_type(data.get("model_type", "bert"))].from_dict(data)


def config_from_json_file(path: str | os.PathLike) -> BertConfig:
    """`config_from_dict` of a JSON file (Google's, Hugging Face's or kbert's config)."""
    return config_from_dict(_read_json(path))
