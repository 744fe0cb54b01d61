"""Downstream tasks as objects: one module per task kind, found by name in one registry.

- `classification`: `ClassificationTask` ("classify") and `RegressionTask` ("regress").
- `tagging`: `TaggingTask` ("tag"). `question_answering`: `QuestionAnsweringTask` ("qa").
- `encoder`: `EncoderTask` ("encoder"), the export of a bare encoder checkpoint.
- `registry`: `get_task`, `task_from_info`, `TASKS`. `model_dir`: `save_model` / `load_model`.
- `readers`: examples from files and tfds. `*_data`, `qa_features`: the tf.data pipelines.
  `word_decoding`, `span_decoding`: decoding used by evaluation and by the serving graph alike.
"""

from kbert.tasks.base import Task, TaskData
from kbert.tasks.classification import ClassificationTask, RegressionTask
from kbert.tasks.encoder import EncoderTask
from kbert.tasks.model_dir import load_model, read_task_info, save_model
from kbert.tasks.question_answering import QuestionAnsweringTask
from kbert.tasks.registry import COMMANDS, REGISTRY, TASKS, get_task, task_from_info, task_name_of
from kbert.tasks.tagging import TaggingTask

__all__ = [
    "COMMANDS", "ClassificationTask", "EncoderTask", "QuestionAnsweringTask", "REGISTRY", "RegressionTask",
    "TASKS", "TaggingTask", "Task", "TaskData", "get_task", "load_model", "read_task_info", "save_model",
    "task_from_info", "task_name_of",
]
