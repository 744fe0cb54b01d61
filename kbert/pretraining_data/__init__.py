"""Pretraining data: corpora, sentence-pair instances, static and dynamic masking, TFRecords, held-out sets.

Text flows one way: `TextCorpus` (documents of sentences) -> `tokenize_documents` (ids and word starts)
-> `create_pretraining_instances` (packed `[CLS] A [SEP] B [SEP]` with an NSP/SOP label) -> masks
(`StaticMasker` into TFRecords, or `DynamicMasker` inside `tf.data`) -> the `pretraining_feature_spec`
batches that `kbert.BertPretrainer` trains on. `create_pretraining_data` runs the whole chain.
"""

from kbert.pretraining_data.corpus import LAYOUTS, TextCorpus, expand_inputs, split_sentences
from kbert.pretraining_data.create import (
    CreatePretrainingDataConfig, create_pretraining_data, pretraining_records,
)
from kbert.pretraining_data.dynamic_masking import DynamicMasker, pretraining_feature_spec, split_features_labels
from kbert.pretraining_data.heldout import heldout_from_directory, heldout_from_text
from kbert.pretraining_data.instances import PretrainingInstance, create_pretraining_instances, pack_pair
from kbert.pretraining_data.static_masking import MaskedExample, MissingMaskTokenError, StaticMasker
from kbert.pretraining_data.text_dataset import text_pretraining_dataset
from kbert.pretraining_data.tfrecords import load_pretraining_dataset, read_pretraining_metadata
from kbert.pretraining_data.tokenization import segment_chinese_words, tokenize_documents, tokenizer_fn

__all__ = [
    "LAYOUTS", "CreatePretrainingDataConfig", "DynamicMasker", "MaskedExample", "MissingMaskTokenError",
    "PretrainingInstance", "StaticMasker", "TextCorpus", "create_pretraining_data",
    "create_pretraining_instances", "expand_inputs", "heldout_from_directory", "heldout_from_text",
    "load_pretraining_dataset", "pack_pair", "pretraining_feature_spec", "pretraining_records",
    "read_pretraining_metadata", "segment_chinese_words", "split_features_labels", "split_sentences",
    "text_pretraining_dataset", "tokenize_documents", "tokenizer_fn",
]
