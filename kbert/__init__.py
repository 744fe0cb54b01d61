"""kbert: BERT as a TensorFlow/Keras 3 model package, from pretraining to the phone.

The public names below are imported on first use (PEP 562): `import kbert` does not load TensorFlow,
and `kbert.BertEncoder` loads what it needs. Importing kbert changes no setting of the process.
"""

from kbert.lazy_exports import lazy_exports
from kbert.tasks.registry import public_names
from kbert.version import __version__

_EXPORTS = {
    "pretrained": "kbert.pretrained",
    "PRESETS": "kbert.config",
    "BertConfig": "kbert.config",
    "AlbertConfig": "kbert.config",
    "RobertaConfig": "kbert.config",
    "DistilBertConfig": "kbert.config",
    "CheckpointError": "kbert.convert.checkpoints",
    "load_pretrained": "kbert.convert.checkpoints",
    "load_pretrainer": "kbert.convert.checkpoints",
    "save_pretrained": "kbert.convert.checkpoints",
    "from_keras_hub": "kbert.convert.keras_hub_backbone",
    "to_keras_hub": "kbert.convert.keras_hub_backbone",
    "BertEmbeddings": "kbert.layers.bert_embeddings",
    "BertEncoder": "kbert.models.bert_encoder",
    "AlbertEncoder": "kbert.models.albert_encoder",
    "RobertaEncoder": "kbert.models.roberta_encoder",
    "DistilBertEncoder": "kbert.models.distilbert_encoder",
    "BertPretrainer": "kbert.models.bert_pretrainer",
    "BertPreprocessor": "kbert.text.bert_preprocessor",
    "BertTokenizer": "kbert.text.bert_tokenizer",
    "ByteLevelBpeTokenizer": "kbert.text.byte_bpe_tokenizer",
    "SentencePieceTokenizer": "kbert.text.sentencepiece_tokenizer",
    "TFLiteBertTokenizer": "kbert.text.tflite_bert_tokenizer",
    "TFLiteSentencePieceTokenizer": "kbert.text.tflite_sentencepiece_tokenizer",
    "learn_vocabulary": "kbert.text.vocabulary",
    "load_tokenizer": "kbert.text.loading",
    "load_embeddings": "kbert.embeddings.embedding_files",
    "load_model": "kbert.tasks.model_dir",
    "load_sentence_encoder": "kbert.tasks.embedding",
    "save_model": "kbert.tasks.model_dir",
    # The Task API: one object per downstream problem, and the loop that fine-tunes any of them. Each task
    # class and its Keras model come from the task registry (`kbert.tasks.registry.public_names`).
    **public_names(),
    "Task": "kbert.tasks.base",
    "get_task": "kbert.tasks.registry",
    "FinetuneConfig": "kbert.training.finetune_config",
    "finetune": "kbert.training.finetune",
    "evaluate_model": "kbert.training.finetune",
    "DistillConfig": "kbert.training.distill_config",
    "Distiller": "kbert.training.distiller",
    "build_student": "kbert.training.student",
    "distill": "kbert.training.distill",
    "PretrainConfig": "kbert.training.pretrain_config",
    "pretrain": "kbert.training.pretrain",
}
__all__ = ["__version__", *_EXPORTS]
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
