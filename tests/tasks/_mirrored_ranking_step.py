"""One training step of an embed model on one device and under a 2-replica MirroredStrategy, same global batch.

Run in a fresh process (the CPU is split into two logical devices before TensorFlow starts); prints
`RESULT {json}`: the losses and the largest weight differences that tests/tasks/test_embedding_loss.py checks.
"""

import json

import tensorflow as tf

cpu = tf.config.list_physical_devices("CPU")[0]
tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)

import keras  # noqa: E402
import numpy as np  # noqa: E402

import kbert  # noqa: E402
from kbert.tasks.embedding import EmbeddingTask  # noqa: E402
from kbert.tasks.embedding_data import embedding_dataset  # noqa: E402
from kbert.training.keras_multi_worker_patch import patch_model_for_multi_worker  # noqa: E402
from tests.conftest import TINY_VOCAB  # noqa: E402

WORDS = ["the", "cat", "sat", "on", "mat", "dog", "ran", "a", "good", "bad"]
BATCH = 8


def examples() -> list[dict]:
    rng = np.random.default_rng(0)
    return [{"text": " ".join(rng.choice(WORDS, rng.integers(2, 6))), "text_pair": " ".join(rng.choice(WORDS, 3)),
             "negative": " ".join(rng.choice(WORDS, rng.integers(1, 7)))} for _ in range(BATCH)]


def build(task: EmbeddingTask, weights=None) -> keras.Model:
    keras.utils.set_random_seed(0)
    encoder = kbert.BertEncoder(vocab_size=len(TINY_VOCAB), hidden_size=16, num_hidden_layers=1,
                                num_attention_heads=2, intermediate_size=32, hidden_dropout_prob=0.0,
                                attention_probs_dropout_prob=0.0)
    model = task.build_model(encoder)
    if weights is not None:
        model.set_weights(weights)
    model.compile(optimizer=keras.optimizers.SGD(1.0), loss=task.loss())
    return patch_model_for_multi_worker(model)


def main() -> None:
    task = EmbeddingTask(negative_column="negative", symmetric=True, scale=5.0)
    tokenizer = kbert.BertTokenizer(TINY_VOCAB)
    data = embedding_dataset(examples(), kbert.BertPreprocessor(tokenizer, 12, padding="dynamic"),
                             task.columns, batch_size=BATCH, full_batches=True)
    x, y = next(iter(data))

    one = build(task)
    start = [w.copy() for w in one.get_weights()]
    one_loss = float(one.compute_loss(x, y, one(x)))
    one.fit(data, epochs=1, verbose=0)

    strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
    with strategy.scope():
        two = build(task, start)
    two_history = two.fit(data, epochs=1, verbose=0).history

    # After the step both models are equal. Each replica's loss: its own anchors against every candidate.
    @tf.function
    def replica_losses(batch):
        return strategy.run(lambda x, y: keras.ops.mean(task.loss().call(y, two(x))), args=batch)

    replicated = strategy.experimental_local_results(replica_losses(next(iter(
        strategy.experimental_distribute_dataset(data)))))
    # Each half alone on one device, without the other half's candidates: what the gathering changes.
    rows = BATCH // 2 * len(task.columns)
    halves = [float(one.compute_loss(None, y[i:i + rows], one({k: v[i:i + rows] for k, v in x.items()})))
              for i in (0, rows)]
    print("RESULT " + json.dumps({
        "replicas": strategy.num_replicas_in_sync,
        "one_loss": one_loss,
        "two_loss": two_history["loss"][0],
        "one_loss_after": float(one.compute_loss(x, y, one(x))),
        "replica_losses_after": [float(v) for v in replicated],
        "halves_alone_after": halves,
        "update": max(float(np.abs(a - b).max()) for a, b in zip(one.get_weights(), start)),
        "weight_difference": max(float(np.abs(a - b).max()) for a, b in zip(one.get_weights(), two.get_weights())),
    }))


if __name__ == "__main__":
    main()
