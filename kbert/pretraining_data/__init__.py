"""Pretraining data: corpora, sentence-pair instances, static and dynamic masking, TFRecords, held-out sets.

Text flows one way: `TextCorpus` (documents of sentences) -> `tokenize_documents` (ids and word starts)
-> `create_pretraining_instances` (packed `[CLS] A [SEP] B [SEP]` with an NSP/SOP label, or RoBERTa's
full sentences with `FullSentencePacker`) -> masks (`StaticMasker` into TFRecords, or `DynamicMasker`
inside `tf.data`; tokens, whole words or ALBERT's n-grams, over a `MaskingVocabulary`) -> the
`pretraining_feature_spec` batches that `kbert.BertPretrainer` trains on. `create_pretraining_data` runs
the whole chain; `model_defaults` holds each model type's settings.
"""

from kbert.lazy_exports import lazy_exports

# name -> module; each is imported on first use (PEP 562), so TensorFlow-free modules of the package load fast.
_EXPORTS = {
    "LAYOUTS": "kbert.pretraining_data.corpus",
    "TextCorpus": "kbert.pretraining_data.corpus",
    "expand_inputs": "kbert.pretraining_data.corpus",
    "split_sentences": "kbert.pretraining_data.corpus",
    "CreatePretrainingDataConfig": "kbert.pretraining_data.create_config",
    "create_pretraining_data": "kbert.pretraining_data.create",
    "pretraining_records": "kbert.pretraining_data.create",
    "DynamicMasker": "kbert.pretraining_data.dynamic_masking",
    "pretraining_feature_spec": "kbert.pretraining_data.dynamic_masking",
    "split_features_labels": "kbert.pretraining_data.dynamic_masking",
    "FullSentencePacker": "kbert.pretraining_data.full_sentence_packer",
    "heldout_from_directory": "kbert.pretraining_data.heldout",
    "heldout_from_text": "kbert.pretraining_data.heldout",
    "MaskingVocabulary": "kbert.pretraining_data.masking_vocabulary",
    "MODEL_DEFAULTS": "kbert.pretraining_data.model_defaults",
    "model_defaults": "kbert.pretraining_data.model_defaults",
    "PretrainingInstance": "kbert.pretraining_data.instances",
    "create_pretraining_instances": "kbert.pretraining_data.instances",
    "pack_pair": "kbert.pretraining_data.instances",
    "MaskedExample": "kbert.pretraining_data.static_masking",
    "MissingMaskTokenError": "kbert.pretraining_data.static_masking",
    "StaticMasker": "kbert.pretraining_data.static_masking",
    "text_pretraining_dataset": "kbert.pretraining_data.text_dataset",
    "load_pretraining_dataset": "kbert.pretraining_data.tfrecords",
    "read_pretraining_metadata": "kbert.pretraining_data.shards",
    "segment_chinese_words": "kbert.pretraining_data.tokenization",
    "tokenize_documents": "kbert.pretraining_data.tokenization",
    "tokenizer_fn": "kbert.pretraining_data.tokenization",
}
__all__ = [
    "LAYOUTS", "MODEL_DEFAULTS", "CreatePretrainingDataConfig", "DynamicMasker", "FullSentencePacker",
    "MaskedExample", "MaskingVocabulary", "MissingMaskTokenError", "PretrainingInstance", "StaticMasker",
    "TextCorpus", "create_pretraining_data", "create_pretraining_instances", "expand_inputs",
    "heldout_from_directory", "heldout_from_text", "load_pretraining_dataset", "model_defaults", "pack_pair",
    "pretraining_feature_spec", "pretraining_records", "read_pretraining_metadata", "segment_chinese_words",
    "split_features_labels", "split_sentences", "text_pretraining_dataset", "tokenize_documents", "tokenizer_fn",
]
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
