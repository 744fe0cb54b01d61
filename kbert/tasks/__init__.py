"""Downstream tasks as objects: one module per task kind, found by name in one registry.

- `classification`: `ClassificationTask` and `RegressionTask`; `classification_model`: `BertClassifier`.
- `tagging`: `TaggingTask`; `tagging_model`: `BertTokenClassifier`.
- `question_answering`: `QuestionAnsweringTask`; `question_answering_model`: `BertQuestionAnswerer`.
- `encoder`: `EncoderTask`, the export of a bare encoder checkpoint.
- `registry`: `get_task`, `task_from_info`, `TASKS`. `model_dir`: `save_model` / `load_model`.
- `readers`: examples from files and tfds. `*_data`, `qa_features`: the tf.data pipelines.
  `word_decoding`, `span_decoding`: decoding used by evaluation and by the serving graph alike.

Each task's Keras model extends `kbert.models.bert_task_model.BertTaskModel` with its head and its loss and
metric defaults.
"""

from kbert.lazy_exports import lazy_exports

# name -> module; each is imported on first use (PEP 562), so TensorFlow-free modules of the package load fast.
_EXPORTS = {
    "Task": "kbert.tasks.base",
    "TaskData": "kbert.tasks.base",
    "BertClassifier": "kbert.tasks.classification_model",
    "BertQuestionAnswerer": "kbert.tasks.question_answering_model",
    "BertTokenClassifier": "kbert.tasks.tagging_model",
    "ClassificationTask": "kbert.tasks.classification",
    "RegressionTask": "kbert.tasks.classification",
    "EncoderTask": "kbert.tasks.encoder",
    "load_model": "kbert.tasks.model_dir",
    "read_task_info": "kbert.tasks.model_dir",
    "save_model": "kbert.tasks.model_dir",
    "QuestionAnsweringTask": "kbert.tasks.question_answering",
    "COMMANDS": "kbert.tasks.registry",
    "REGISTRY": "kbert.tasks.registry",
    "TASKS": "kbert.tasks.registry",
    "get_task": "kbert.tasks.registry",
    "task_from_info": "kbert.tasks.registry",
    "TaggingTask": "kbert.tasks.tagging",
}
__all__ = [
    "BertClassifier", "BertQuestionAnswerer", "BertTokenClassifier", "COMMANDS", "ClassificationTask",
    "EncoderTask", "QuestionAnsweringTask", "REGISTRY", "RegressionTask", "TASKS", "TaggingTask", "Task",
    "TaskData", "get_task", "load_model", "read_task_info", "save_model", "task_from_info",
]
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
