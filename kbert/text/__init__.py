"""Text preprocessing: BERT tokenizers (TF and TFLite), input packer, tokenizer loading, vocabulary learning."""

from kbert.text.bert_preprocessor import BertPreprocessor
from kbert.text.bert_tokenizer import BertTokenizer
from kbert.text.loading import load_tokenizer
from kbert.text.tflite_bert_tokenizer import TFLiteBertTokenizer
from kbert.text.vocabulary import learn_vocabulary

__all__ = ["BertTokenizer", "TFLiteBertTokenizer", "BertPreprocessor", "load_tokenizer", "learn_vocabulary"]
