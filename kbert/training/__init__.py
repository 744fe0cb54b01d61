"""Training infrastructure for any Keras model: optimizer and schedule, strategies, callbacks.

- `create_optimizer`, `set_mixed_precision`, `LinearWarmupLinearDecay`: BERT's AdamW / LAMB recipe.
- `get_strategy`, `scale_batch_and_lr`: `--strategy auto|one_device|mirrored|multi_worker|tpu`.
- `patch_model_for_multi_worker`: the Keras 3.15 MultiWorkerMirroredStrategy `fit` workaround.
- `training_callbacks`, `fit_steps`, `StepCheckpoint`, `restored_step`: step checkpoints, resume
  after a crash, TensorBoard.

The drivers are imported from their modules: `kbert.training.finetune` (`finetune(task, FinetuneConfig)`,
`evaluate_model`, for any `kbert.tasks` task) and `kbert.training.pretrain`.
"""

from kbert.training.callbacks import (
    StepCheckpoint, backup_dir, fit_steps, restored_step, training_callbacks,
)
from kbert.training.multi_worker import in_multi_worker_mode, patch_model_for_multi_worker
from kbert.training.optimizers import WEIGHT_DECAY_EXCLUDE, create_optimizer, set_mixed_precision
from kbert.training.schedules import LinearWarmupLinearDecay
from kbert.training.strategy import (
    STRATEGY_NAMES, get_strategy, is_chief, num_workers, read_tf_config, scale_batch_and_lr,
)

__all__ = [
    "LinearWarmupLinearDecay", "STRATEGY_NAMES", "StepCheckpoint", "WEIGHT_DECAY_EXCLUDE",
    "backup_dir", "create_optimizer", "fit_steps", "get_strategy", "in_multi_worker_mode",
    "is_chief", "num_workers", "patch_model_for_multi_worker", "read_tf_config",
    "restored_step", "scale_batch_and_lr", "set_mixed_precision", "training_callbacks",
]
