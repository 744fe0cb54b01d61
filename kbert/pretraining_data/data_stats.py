"""`record_stats`: the instance count, features, next-sentence share and real tokens of pretraining data."""

from __future__ import annotations

import os

import numpy as np
import tensorflow as tf

from kbert.pretraining_data.shards import tfrecord_files


def record_stats(directory: str | os.PathLike) -> dict:
    """What a `create-pretraining-data` output directory holds, read back from its shards: the figures
    on which the one-process and the Beam outputs are compared.

    Args:
        directory: str or PathLike. The output directory (a URL too).

    Returns:
        {"instances": int, "features": {name: (kind, length)}, "nsp_positive": float (share of label 0,
        "B follows A"), "mean_real_tokens": float (non-padding tokens per instance)}.
    """
    features: dict[str, tuple[str, int]] = {}
    count = positives = real = 0
    for path in tfrecord_files(directory):
        for raw in tf.data.TFRecordDataset(path).as_numpy_iterator():
            example = tf.train.Example.FromString(raw).features.feature
            for name, feature in example.items():
                kind = feature.WhichOneof("kind")
                shape = (kind, len(getattr(feature, kind).value))
                if features.setdefault(name, shape) != shape:
                    raise ValueError(f"{path}: feature {name} is {shape}, earlier records had {features[name]}.")
            count += 1
            positives += example["next_sentence_label"].int64_list.value[0] == 0
            real += int(np.sum(example["padding_mask"].int64_list.value))
    return {"instances": count, "features": dict(sorted(features.items())),
            "nsp_positive": positives / max(count, 1), "mean_real_tokens": real / max(count, 1)}
