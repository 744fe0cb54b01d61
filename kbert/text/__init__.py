"""Text preprocessing: BERT tokenizer, input packer, tokenizer loading and vocabulary learning."""

from kbert.text.bert_preprocessor import BertPreprocessor
from kbert.text.bert_tokenizer import BertTokenizer
from kbert.text.loading import load_tokenizer
from kbert.text.vocabulary import learn_vocabulary

__all__ = ["BertTokenizer", "BertPreprocessor", "load_tokenizer", "learn_vocabulary"]
