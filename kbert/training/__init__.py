"""Training infrastructure for any Keras model: optimizer and schedule, strategies, callbacks.

- `set_mixed_precision`: the Keras dtype policy of `--mixed-precision` (BERT's AdamW / LAMB recipe and
  its schedule are `kbert.optim`'s).
- `get_strategy`, `scale_batch_and_lr`: `--strategy auto|one_device|mirrored|multi_worker|tpu`.
- `patch_model_for_multi_worker`: a patch of Keras 3.15's multi-replica `fit` (`keras_multi_worker_patch`).
- `training_callbacks`, `fit_steps`, `StepCheckpoint`, `restored_step`: step checkpoints, resume
  after a crash, TensorBoard.

The drivers are imported from their modules, and set up a run the same way (`kbert.training.run_setup`:
the strategy, then the precision; the encoder): `kbert.training.finetune` (`finetune(task, FinetuneConfig)`,
`evaluate_model`, for any `kbert.tasks` task) and `kbert.training.pretrain`.
"""

from kbert.lazy_exports import lazy_exports

# name -> module; each is imported on first use (PEP 562), so TensorFlow-free modules of the package load fast.
_EXPORTS = {
    "StepCheckpoint": "kbert.training.callbacks",
    "backup_dir": "kbert.training.callbacks",
    "fit_steps": "kbert.training.callbacks",
    "restored_step": "kbert.training.callbacks",
    "training_callbacks": "kbert.training.callbacks",
    "in_multi_worker_mode": "kbert.training.keras_multi_worker_patch",
    "patch_model_for_multi_worker": "kbert.training.keras_multi_worker_patch",
    "set_mixed_precision": "kbert.training.mixed_precision",
    "STRATEGY_NAMES": "kbert.constants",
    "get_strategy": "kbert.training.strategy",
    "is_chief": "kbert.training.strategy",
    "num_workers": "kbert.training.strategy",
    "read_tf_config": "kbert.training.strategy",
    "scale_batch_and_lr": "kbert.training.strategy",
}
__all__ = [
    "STRATEGY_NAMES", "StepCheckpoint",
    "backup_dir", "fit_steps", "get_strategy", "in_multi_worker_mode",
    "is_chief", "num_workers", "patch_model_for_multi_worker", "read_tf_config",
    "restored_step", "scale_batch_and_lr", "set_mixed_precision", "training_callbacks",
]
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
