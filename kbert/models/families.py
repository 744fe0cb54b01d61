"""The encoder families kbert builds, by `model_type`: each config class with its encoder class."""

from __future__ import annotations

from kbert.config import BertConfig, check_model_type
from kbert.models.albert_encoder import AlbertEncoder
from kbert.models.bert_encoder import BertEncoder
from kbert.models.distilbert_encoder import DistilBertEncoder
from kbert.models.roberta_encoder import RobertaEncoder

# model_type -> (config class, encoder class), each encoder naming its config class. The config classes alone
# (read without TensorFlow) are `kbert.config.CONFIG_CLASSES`: a new family is added to both.
FAMILIES: dict[str, tuple[type[BertConfig], type[BertEncoder]]] = {
    encoder.config_class.model_type: (encoder.config_class, encoder)
    for encoder in (BertEncoder, AlbertEncoder, RobertaEncoder, DistilBertEncoder)
}


def encoder_class(model_type: str) -> type[BertEncoder]:
    """The encoder class of a family, by `model_type`; ValueError for one kbert does not read.

    Example:
    >>> encoder_class("albert").__name__
    'AlbertEncoder'
    """
    return FAMILIES[check_model_type(model_type)][1]


def encoder_from_config(config: BertConfig, dtype=None) -> BertEncoder:
    """A fresh encoder of `config`'s family and shape (BertEncoder for a BertConfig, AlbertEncoder for an
    AlbertConfig, ...).

    Args:
        config: a `BertConfig` or a subclass.
        dtype: a Keras dtype policy name, or None.

    Returns:
        The encoder, randomly initialised.

    Example:
    >>> from kbert.config import RobertaConfig
    >>> type(encoder_from_config(RobertaConfig.from_preset("base", num_hidden_layers=1, vocab_size=20))).__name__
    'RobertaEncoder'
    """
    return encoder_class(config.model_type)(**config.to_dict(), dtype=dtype)
