"""Subprocess helper for tests/training: distributed and crash/resume runs of tiny Keras models.

Each mode runs in its own process because logical devices, TF_CONFIG and collective ops must be set
before TensorFlow initialises. Every mode prints one line `RESULT <json>` on success.

    python -m tests.training._worker mirrored OUT
    python -m tests.training._worker multi_worker OUT INDEX PORT0,PORT1
    python -m tests.training._worker resume OUT TOTAL_STEPS SAVE_EVERY SLEEP_S
"""

from __future__ import annotations

import json
import os
import pathlib
import sys
import time

os.environ["CUDA_VISIBLE_DEVICES"] = ""  # force CPU
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

GLOBAL_BATCH = 8
NUM_EXAMPLES = 64


def data():
    import numpy as np

    rng = np.random.RandomState(0)
    x = rng.randn(NUM_EXAMPLES, 4).astype("float32")
    y = (x @ np.array([[1.0], [-2.0], [0.5], [0.0]], "float32") + 0.1).astype("float32")
    return x, y


def build_model():
    """A tiny model with a kernel, a bias and a LayerNormalization (gamma/beta)."""
    import keras

    keras.utils.set_random_seed(1)
    inputs = keras.Input((4,), name="features")
    hidden = keras.layers.Dense(8, activation="relu", name="hidden")(inputs)
    hidden = keras.layers.LayerNormalization(name="layer_norm")(hidden)
    outputs = keras.layers.Dense(1, name="out")(hidden)
    return keras.Model(inputs, outputs)


def compile_model(model, num_train_steps=16, gradient_accumulation_steps=1, clipnorm=None):
    from kbert.optim import create_optimizer

    # No clipping by default: Keras clips each replica's gradient before the all-reduce, so a
    # distributed run equals a single-device one only without clipping.
    optimizer = create_optimizer(
        1e-2, num_train_steps=num_train_steps, warmup_steps=2, clipnorm=clipnorm,
        gradient_accumulation_steps=gradient_accumulation_steps,
    )
    model.compile(optimizer=optimizer, loss="mse", metrics=["mae"])


def flat_weights(model):
    import numpy as np

    return np.concatenate([np.asarray(w).ravel() for w in model.get_weights()])


def dataset(batch_size=GLOBAL_BATCH):
    import tensorflow as tf

    ds = tf.data.Dataset.from_tensor_slices(data()).batch(batch_size)
    options = tf.data.Options()
    options.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.DATA
    return ds.with_options(options)


def reference_weights(out: pathlib.Path, epochs: int = 2):
    """Single-device training from the same initial weights, for comparison."""
    model = build_model()
    model.load_weights(out / "init.weights.h5")
    compile_model(model)
    model.fit(dataset(), epochs=epochs, verbose=0, shuffle=False)
    return flat_weights(model)


def mirrored(out: pathlib.Path) -> dict:
    import numpy as np
    import tensorflow as tf

    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
    from kbert.training.strategy import get_strategy, scale_batch_and_lr

    model = build_model()
    model.save_weights(out / "init.weights.h5")
    initial = flat_weights(model)
    reference = reference_weights(out)
    strategy = get_strategy("mirrored", devices=["/cpu:0", "/cpu:1"])
    with strategy.scope():
        model = build_model()
        model.load_weights(out / "init.weights.h5")
        compile_model(model)
    history = model.fit(dataset(), epochs=2, verbose=0, shuffle=False)
    weights = flat_weights(model)
    # Accumulation: 2 batches of 4 (2 per replica) per update == 1 batch of 8 on one device.
    with strategy.scope():
        accumulating = build_model()
        accumulating.load_weights(out / "init.weights.h5")
        compile_model(accumulating, gradient_accumulation_steps=2)
    accumulating.fit(dataset(GLOBAL_BATCH // 2), epochs=2, verbose=0, shuffle=False)
    return {
        "replicas": strategy.num_replicas_in_sync,
        "scaled": list(scale_batch_and_lr(8, 1e-4, strategy)),
        "loss": history.history["loss"],
        "iterations": int(model.optimizer.iterations.numpy()),
        "max_abs_diff_vs_single_device": float(np.max(np.abs(weights - reference))),
        "accumulation_iterations": int(accumulating.optimizer.iterations.numpy()),
        "accumulation_max_abs_diff_vs_single_device": float(
            np.max(np.abs(flat_weights(accumulating) - reference))),
        "trained_distance": float(np.max(np.abs(reference - initial))),
    }


def multi_worker(out: pathlib.Path, index: int, ports: str) -> dict:
    """Reproduces both upstream failures, then trains with the workaround."""
    import types

    import numpy as np

    os.environ["TF_CONFIG"] = json.dumps({
        "cluster": {"worker": [f"127.0.0.1:{p}" for p in ports.split(",")]},
        "task": {"type": "worker", "index": index},
    })
    from kbert.training.strategy import get_strategy  # before anything initialises TF

    strategy = get_strategy("multi_worker")
    import keras

    from kbert.training.keras_multi_worker_patch import patch_model_for_multi_worker

    def fresh_model():
        with strategy.scope():
            model = build_model()
            model.load_weights(out / "init.weights.h5")
            compile_model(model)
        return model

    def fit_error(model):
        try:
            model.fit(dataset(), epochs=1, verbose=0, shuffle=False)
        except Exception as e:  # noqa: BLE001  (the upstream failures are reported to the test)
            return f"{type(e).__name__}: {e}"[:400]
        return None

    # keras-team/keras#20585: unpatched.
    nested_batch_error = fit_error(fresh_model())
    # keras-team/keras#20329: only the symbolic-build fix, Keras' own train_step.
    model = patch_model_for_multi_worker(fresh_model())
    model.train_step = types.MethodType(type(model).train_step, model)
    scalar_log_error = fit_error(model)

    model = patch_model_for_multi_worker(fresh_model())
    history = model.fit(dataset(), epochs=2, verbose=0, shuffle=False)
    evaluation = model.evaluate(dataset(), verbose=0, return_dict=True)
    np.save(out / f"worker{index}.npy", flat_weights(model))
    return {
        "replicas": strategy.num_replicas_in_sync,
        "nested_batch_error": nested_batch_error,
        "scalar_log_error": scalar_log_error,
        "history": history.history,
        "evaluate": evaluation,
        "iterations": int(model.optimizer.iterations.numpy()),
        "keras": keras.__version__,
    }


def resume(out: pathlib.Path, total_steps: int, save_every: int, sleep_s: float) -> dict:
    import keras
    import tensorflow as tf

    from kbert.training.callbacks import fit_steps, restored_step, training_callbacks

    class Recorder(keras.callbacks.Callback):
        """Records the step after BackupAndRestore has restored, and slows training down."""

        def on_train_begin(self, logs=None):
            self.start_step = int(self.model.optimizer.iterations.numpy())
            (out / f"start-{os.getpid()}.json").write_text(json.dumps(self.start_step))

        def on_train_batch_end(self, batch, logs=None):
            time.sleep(sleep_s)

    model = build_model()
    compile_model(model, num_train_steps=total_steps)
    expected_start = restored_step(out, save_every)
    ds = tf.data.Dataset.from_tensor_slices(data()).repeat().batch(4).skip(expected_start)
    recorder = Recorder()
    callbacks = training_callbacks(out, save_every, total_steps=total_steps, tensorboard=True)
    model.fit(ds, verbose=0, callbacks=callbacks + [recorder], **fit_steps(total_steps, save_every))
    return {
        "expected_start": expected_start,
        "start_step": recorder.start_step,
        "iterations": int(model.optimizer.iterations.numpy()),
        "checkpoints": sorted(p.name for p in (out / "checkpoints").glob("*.weights.h5")),
        "tensorboard_files": len(list((out / "logs").rglob("events.out.tfevents*"))),
        "callbacks": [type(c).__name__ for c in callbacks],
    }


def main(argv: list[str]) -> None:
    mode, out = argv[0], pathlib.Path(argv[1])
    if mode == "mirrored":
        result = mirrored(out)
    elif mode == "multi_worker":
        result = multi_worker(out, int(argv[2]), argv[3])
    elif mode == "resume":
        result = resume(out, int(argv[2]), int(argv[3]), float(argv[4]))
    else:
        raise SystemExit(f"unknown mode {mode!r}")
    print("RESULT " + json.dumps(result), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
