"""Text preprocessing: BERT's WordPiece tokenizers (TF and TFLite), ALBERT's SentencePiece tokenizer, RoBERTa's
byte-level BPE, the input packer, tokenizer loading, vocabulary learning."""

from kbert.lazy_exports import lazy_exports

# name -> module; each is imported on first use (PEP 562), so TensorFlow-free modules of the package load fast.
_EXPORTS = {
    "BertPreprocessor": "kbert.text.bert_preprocessor",
    "BertTokenizer": "kbert.text.bert_tokenizer",
    "ByteLevelBpeTokenizer": "kbert.text.byte_bpe_tokenizer",
    "SentencePieceTokenizer": "kbert.text.sentencepiece_tokenizer",
    "load_tokenizer": "kbert.text.loading",
    "TFLiteBertTokenizer": "kbert.text.tflite_bert_tokenizer",
    "TFLiteSentencePieceTokenizer": "kbert.text.tflite_sentencepiece_tokenizer",
    "learn_vocabulary": "kbert.text.vocabulary",
    "learn_sentencepiece": "kbert.text.sentencepiece_vocabulary",
}
__all__ = ["BertTokenizer", "ByteLevelBpeTokenizer", "SentencePieceTokenizer", "TFLiteBertTokenizer",
           "TFLiteSentencePieceTokenizer", "BertPreprocessor",
           "load_tokenizer", "learn_vocabulary", "learn_sentencepiece"]
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
