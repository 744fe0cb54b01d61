"""kbert: BERT as a TensorFlow/Keras 3 model package, from pretraining to the phone.

The public names below are imported on first use (PEP 562): `import kbert` does not load TensorFlow,
and `kbert.BertEncoder` loads what it needs. Importing kbert changes no setting of the process.
"""

from kbert.lazy_exports import lazy_exports
from kbert.version import __version__

_EXPORTS = {
    "pretrained": "kbert.pretrained",
    "PRESETS": "kbert.config",
    "BertConfig": "kbert.config",
    "CheckpointError": "kbert.convert.checkpoints",
    "load_pretrained": "kbert.convert.checkpoints",
    "load_pretrainer": "kbert.convert.checkpoints",
    "save_pretrained": "kbert.convert.checkpoints",
    "from_keras_hub": "kbert.convert.keras_hub_backbone",
    "to_keras_hub": "kbert.convert.keras_hub_backbone",
    "BertEmbeddings": "kbert.layers.bert_embeddings",
    "BertClassifier": "kbert.tasks.classification_model",
    "BertEncoder": "kbert.models.bert_encoder",
    "BertPretrainer": "kbert.models.bert_pretrainer",
    "BertQuestionAnswerer": "kbert.tasks.question_answering_model",
    "BertTokenClassifier": "kbert.tasks.tagging_model",
    "BertPreprocessor": "kbert.text.bert_preprocessor",
    "BertTokenizer": "kbert.text.bert_tokenizer",
    "SentencePieceTokenizer": "kbert.text.sentencepiece_tokenizer",
    "TFLiteBertTokenizer": "kbert.text.tflite_bert_tokenizer",
    "learn_vocabulary": "kbert.text.vocabulary",
    "load_tokenizer": "kbert.text.loading",
    "load_model": "kbert.tasks.model_dir",
    "save_model": "kbert.tasks.model_dir",
    # The Task API: one object per downstream problem, and the loop that fine-tunes any of them.
    "Task": "kbert.tasks.base",
    "ClassificationTask": "kbert.tasks.classification",
    "RegressionTask": "kbert.tasks.classification",
    "TaggingTask": "kbert.tasks.tagging",
    "QuestionAnsweringTask": "kbert.tasks.question_answering",
    "get_task": "kbert.tasks.registry",
    "FinetuneConfig": "kbert.training.finetune_config",
    "finetune": "kbert.training.finetune",
    "evaluate_model": "kbert.training.finetune",
    "PretrainConfig": "kbert.training.pretrain_config",
    "pretrain": "kbert.training.pretrain",
}
__all__ = ["__version__", *_EXPORTS]
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
