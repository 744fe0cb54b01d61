"""kbert: BERT as a TensorFlow/Keras 3 model package, from pretraining to the phone."""

import os as _os

# TF's oneDNN kernels are off by default on some CPUs (AMD); they run BERT 1.75x faster there.
_os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "1")

from kbert import pretrained  # noqa: E402
from kbert.config import PRESETS, BertConfig  # noqa: E402
from kbert.convert.checkpoints import (  # noqa: E402
    CheckpointError, load_pretrained, load_pretrainer, save_pretrained)
from kbert.convert.keras_hub_backbone import from_keras_hub, to_keras_hub  # noqa: E402
from kbert.layers.bert_embeddings import BertEmbeddings  # noqa: E402
from kbert.models.bert_classifier import BertClassifier  # noqa: E402
from kbert.models.bert_encoder import BertEncoder  # noqa: E402
from kbert.models.bert_pretrainer import BertPretrainer  # noqa: E402
from kbert.models.bert_question_answerer import BertQuestionAnswerer  # noqa: E402
from kbert.models.bert_token_classifier import BertTokenClassifier  # noqa: E402
from kbert.text import (  # noqa: E402
    BertPreprocessor, BertTokenizer, TFLiteBertTokenizer, learn_vocabulary, load_tokenizer)
from kbert.tasks.model_dir import load_model, save_model  # noqa: E402
from kbert.version import __version__  # noqa: E402
