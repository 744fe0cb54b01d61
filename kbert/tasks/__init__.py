"""Downstream tasks as objects: one module per task kind, found by name in one registry.

- `classification`: `ClassificationTask`, `RegressionTask` and their reading; `classification_model`:
  `BertClassifier`.
- `tagging`: `TaggingTask` and its reading; `tagging_model`: `BertTokenClassifier`.
- `question_answering`: `QuestionAnsweringTask` and its reading; `question_answering_model`:
  `BertQuestionAnswerer`.
- `encoder`: `EncoderTask`, the export of a bare encoder checkpoint.
- `registry`: one `register` line per task; `get_task`, `task_from_info`, `TASKS`, `COMMANDS`.
  `model_dir`: `save_model` / `load_model`.
- `readers`: the file formats and tfds loading the tasks read with. `*_data`, `qa_features`: the tf.data
  pipelines. `word_decoding`, `span_decoding`: decoding used by evaluation and by the serving graph alike.

Each task's Keras model extends `kbert.models.bert_task_model.BertTaskModel` with its head and its loss and
metric defaults.
"""

from kbert.lazy_exports import lazy_exports
from kbert.tasks.registry import public_names

# name -> module; each is imported on first use (PEP 562), so TensorFlow-free modules of the package load fast.
_EXPORTS = {
    # Every registered task class and task model (`kbert.tasks.registry`: one line per task).
    **public_names(),
    "Task": "kbert.tasks.base",
    "TaskData": "kbert.tasks.base",
    "load_model": "kbert.tasks.model_dir",
    "read_task_info": "kbert.tasks.model_dir",
    "save_model": "kbert.tasks.model_dir",
    "COMMANDS": "kbert.tasks.registry",
    "REGISTRY": "kbert.tasks.registry",
    "TASKS": "kbert.tasks.registry",
    "get_task": "kbert.tasks.registry",
    "register": "kbert.tasks.registry",
    "task_from_info": "kbert.tasks.registry",
}
__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
