"""Config round trip for models built around a `BertEncoder`: the encoder travels serialized in the config."""

from __future__ import annotations

from typing import Any

import keras


class EncoderConfigMixin:
    """`get_config` / `from_config` for a `keras.Model` that holds `self.encoder`.

    A subclass lists its own constructor arguments in `encoder_model_config()`; the encoder is added here, to
    Keras' own config (name, trainable, dtype), and `from_config` rebuilds the encoder before calling the
    constructor.
    """

    def encoder_model_config(self) -> dict[str, Any]:
        return {}

    def get_config(self) -> dict[str, Any]:
        config = super().get_config()
        config.update({"encoder": keras.layers.serialize(self.encoder), **self.encoder_model_config()})
        return config

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        config["encoder"] = keras.layers.deserialize(config["encoder"])
        return cls(**config)
