"""Distribution strategies by name, TF_CONFIG parsing, and batch / learning-rate scaling.

`--strategy` picks one of:

- `auto`: `multi_worker` when TF_CONFIG names more than one worker, `mirrored` over all GPUs when
  there are several, `one_device` on the GPU when there is one, else TensorFlow's default strategy.
  `auto` never picks `tpu` (probing for a TPU needs a network call).
- `one_device`: `tf.distribute.OneDeviceStrategy` on `devices[0]`, the first GPU, or the CPU.
- `mirrored`: `tf.distribute.MirroredStrategy` over `devices` (default: all GPUs, else every logical
  CPU device when there are several, else the CPU).
- `multi_worker`: `tf.distribute.MultiWorkerMirroredStrategy`; the cluster comes from the TF_CONFIG
  environment variable (see `read_tf_config`). Keras 3.15 `fit` needs
  `kbert.training.keras_multi_worker_patch.patch_model_for_multi_worker` under it.
- `tpu`: the standard path, `TPUClusterResolver(tpu)` -> `experimental_connect_to_cluster` ->
  `initialize_tpu_system` -> `TPUStrategy` (`tpu_strategy`). `tpu` is `local` on a Cloud TPU VM, a TPU
  name or a `grpc://` address; None lets the resolver read TPU_NAME. Without a TPU it raises a
  ValueError saying so. The order and the arguments are unit-tested with a stand-in resolver (no TPU is
  available to the test suite); training under it always compiles the whole step with XLA at fixed
  shapes (`kbert.training.xla`).
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Sequence
from typing import Any, Literal

import tensorflow as tf

from kbert.constants import STRATEGY_NAMES, StrategyName


def read_tf_config() -> dict[str, Any]:
    """Parses the TF_CONFIG environment variable ({} when it is unset or empty).

    TF_CONFIG is the JSON that tf.distribute reads to find the cluster, e.g.
    `{"cluster": {"worker": ["host1:port", "host2:port"]}, "task": {"type": "worker", "index": 0}}`;
    every worker gets the same cluster and its own task index.

    Returns:
        The parsed dict.

    Raises:
        ValueError: TF_CONFIG is not valid JSON, or lacks `cluster` / `task` entries that match.

    Example:
    >>> os.environ.pop("TF_CONFIG", None) and None
    >>> read_tf_config()
    {}
    """
    raw = os.environ.get("TF_CONFIG", "").strip()
    if not raw:
        return {}
    try:
        config = json.loads(raw)
    except json.JSONDecodeError as e:
        raise ValueError(f"TF_CONFIG is not valid JSON ({e}): {raw[:200]!r}") from None
    if not isinstance(config, dict) or not isinstance(config.get("cluster"), dict):
        raise ValueError(f"TF_CONFIG needs a 'cluster' dict: {raw[:200]!r}")
    task = config.get("task", {})
    task_type, index = task.get("type"), task.get("index", 0)
    if task_type is not None:
        members = config["cluster"].get(task_type)
        if members is None:
            raise ValueError(f"TF_CONFIG task type {task_type!r} is not in its cluster {raw[:200]!r}")
        if not 0 <= int(index) < len(members):
            raise ValueError(
                f"TF_CONFIG task index {index} is out of range for {len(members)} {task_type}(s)"
            )
    return config


def num_workers() -> int:
    """Number of workers (including a `chief`) named by TF_CONFIG; 1 without it."""
    cluster = read_tf_config().get("cluster", {})
    return max(1, len(cluster.get("worker", [])) + len(cluster.get("chief", [])))


def is_chief() -> bool:
    """Whether this process is the chief: task `chief`, or worker 0 when there is no chief.

    Only the chief should write shared outputs (TensorBoard logs, final exports); the other
    workers write to their own scratch directories.
    """
    config = read_tf_config()
    if not config:
        return True
    task = config.get("task", {})
    task_type, index = task.get("type", "worker"), int(task.get("index", 0))
    if task_type == "chief":
        return True
    return task_type == "worker" and index == 0 and "chief" not in config["cluster"]


def get_strategy(
    name: StrategyName | str = "auto",
    devices: Sequence[str] | None = None,
    tpu: str | None = None,
) -> tf.distribute.Strategy:
    """Returns the tf.distribute strategy called `name`.

    Create the strategy before building anything else in TensorFlow (MultiWorkerMirroredStrategy
    and TPUStrategy must come first), then build and compile the model inside `strategy.scope()`.

    Args:
        name: str. One of `auto`, `one_device`, `mirrored`, `multi_worker`, `tpu` (see the module
            docstring).
        devices: sequence of str or None. Devices for `one_device` / `mirrored`, e.g.
            `["/cpu:0", "/cpu:1"]` for logical CPU devices.
        tpu: str or None. TPU name or `grpc://` address for `tpu`; None lets
            `TPUClusterResolver` find the local TPU or the one named by the environment.

    Returns:
        A `tf.distribute.Strategy`.

    Example:
    >>> get_strategy("one_device", devices=["/cpu:0"]).num_replicas_in_sync
    1
    """
    if name not in STRATEGY_NAMES:
        raise ValueError(f"strategy must be one of {', '.join(STRATEGY_NAMES)}; got {name!r}")
    if name == "auto" and num_workers() > 1:
        name = "multi_worker"
    if name == "multi_worker":
        # Before anything initialises the TF runtime (listing devices would): collective ops must
        # be configured at program startup.
        read_tf_config()  # fail early with a clear message on a malformed TF_CONFIG
        return tf.distribute.MultiWorkerMirroredStrategy()
    if name == "tpu":
        return tpu_strategy(tpu)
    gpus = tf.config.list_logical_devices("GPU")
    if name == "auto":
        if len(gpus) > 1:
            name = "mirrored"
        elif gpus:
            name = "one_device"
        else:
            return tf.distribute.get_strategy()
    if name == "one_device":
        device = devices[0] if devices else (gpus[0].name if gpus else "/cpu:0")
        return tf.distribute.OneDeviceStrategy(device)
    if not devices and not gpus:
        # MirroredStrategy alone takes /cpu:0 only; logical CPUs set up by the user count as replicas.
        cpus = [device.name for device in tf.config.list_logical_devices("CPU")]
        devices = cpus if len(cpus) > 1 else None
    return tf.distribute.MirroredStrategy(devices=list(devices) if devices else None)


def tpu_strategy(tpu: str | None = None) -> tf.distribute.Strategy:
    """Connects to a TPU and returns its `tf.distribute.TPUStrategy` (the TensorFlow TPU guide's steps).

    `TPUClusterResolver(tpu)` -> `tf.config.experimental_connect_to_cluster` ->
    `tf.tpu.experimental.initialize_tpu_system` -> `TPUStrategy(resolver)`. Call it before building
    anything else in TensorFlow.

    Args:
        tpu: str or None. `local` on a Cloud TPU VM (the TPU is attached to this host), a TPU name or a
            `grpc://host:8470` address; None or "" lets the resolver find the TPU from TPU_NAME or the
            Google Cloud metadata.

    Returns:
        A `tf.distribute.TPUStrategy`.

    Raises:
        ValueError: no TPU could be found or initialised (the message names the address tried and
            TensorFlow's reason; the TensorFlow error is its cause).

    Example:
    >>> tpu_strategy("local")  # doctest: +SKIP
    """
    where = f"--tpu {tpu}" if tpu else "no --tpu (TPUClusterResolver reads TPU_NAME)"
    hint = ("On a Cloud TPU VM pass --tpu local; for a TPU node or pod, its name or grpc:// address. "
            "Without a TPU use another --strategy.")
    try:
        resolver = tf.distribute.cluster_resolver.TPUClusterResolver(tpu=tpu or None)
    except (ValueError, RuntimeError, ImportError, OSError) as e:
        raise ValueError(f"--strategy tpu: no TPU found with {where}: {str(e).rstrip('.')}. {hint}") from e
    try:
        tf.config.experimental_connect_to_cluster(resolver)
        tf.tpu.experimental.initialize_tpu_system(resolver)
    except (tf.errors.OpError, ValueError, RuntimeError) as e:
        reason = getattr(e, "message", str(e)).strip().split("\n")[0].rstrip(".")
        raise ValueError(f"--strategy tpu: no TPU could be initialised with {where}: {reason}. {hint}") from e
    return tf.distribute.TPUStrategy(resolver)


def scale_batch_and_lr(
    per_replica_batch: int,
    lr: float,
    strategy: tf.distribute.Strategy,
    scaling: Literal["linear", "sqrt", "none"] = "linear",
) -> tuple[int, float]:
    """Scales a batch size and learning rate tuned on one replica to `strategy`'s replica count.

    Data parallelism keeps the per-replica batch: with `R = strategy.num_replicas_in_sync`
    replicas each replica still sees `per_replica_batch` examples per step, so the global batch (the
    one the tf.data pipeline must `batch()` with; tf.distribute splits it across the replicas) is
    `per_replica_batch * R`. The learning rate follows the batch: `lr * R` with the linear rule (Goyal
    et al. 2017, for SGD/AdamW with warmup), `lr * sqrt(R)` with the square-root rule (used with
    LAMB by You et al. 2019), or unchanged with `none`. The number of training steps for the same
    number of epochs shrinks by `R`; the caller divides it.

    Args:
        per_replica_batch: int. The batch size tuned on a single replica: each replica's share of a step.
        lr: float. The learning rate tuned with that batch.
        strategy: tf.distribute.Strategy. The strategy the model trains under.
        scaling: str. `linear`, `sqrt` or `none`.

    Returns:
        `(per_replica_batch * R, scaled learning rate)`: the global batch and its rate.

    Example:
    >>> scale_batch_and_lr(32, 1e-4, tf.distribute.get_strategy())
    (32, 0.0001)
    """
    if per_replica_batch < 1:
        raise ValueError(f"batch size must be >= 1, got {per_replica_batch}")
    replicas = int(strategy.num_replicas_in_sync)
    factors = {"linear": float(replicas), "sqrt": math.sqrt(replicas), "none": 1.0}
    if scaling not in factors:
        raise ValueError(f"scaling must be 'linear', 'sqrt' or 'none'; got {scaling!r}")
    return per_replica_batch * replicas, lr * factors[scaling]
