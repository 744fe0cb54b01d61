"""Names every part of kbert agrees on, defined once: BERT's special tokens, the ignored label, objectives.

This module imports nothing from kbert, so every tier (text, data, models, training, export) may use it.
"""

from typing import Literal, get_args

# BERT's special tokens. Ids are looked up in each vocabulary: Google's vocabularies put them at 0, 100,
# 101, 102, 103; vocabularies learned by `kbert vocab` at 0-4.
PAD, UNK, CLS, SEP, MASK = "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"
SPECIAL_TOKENS = (PAD, UNK, CLS, SEP, MASK)
# What a tokenizer needs; [MASK] matters only to pretraining.
TOKENIZER_SPECIAL_TOKENS = (PAD, UNK, CLS, SEP)

# The label of a position that no loss or metric scores (word pieces after the first, [CLS], [SEP],
# padding), the same value as PyTorch's `ignore_index` default.
IGNORE_LABEL = -100

# Sentence-level pretraining objectives: next-sentence prediction (BERT), sentence-order prediction
# (ALBERT), or masked LM alone.
OBJECTIVES = ("nsp", "sop", "none")

# How pretraining instances are packed: BERT's segment pair `[CLS] A [SEP] B [SEP]` (for NSP/SOP), or
# RoBERTa's full sentences, one segment of contiguous sentences that may cross documents (objective none).
SEGMENT_PAIR, FULL_SENTENCES = "segment-pair", "full-sentences"
PACKINGS = (SEGMENT_PAIR, FULL_SENTENCES)

# Keras' `verbose` of `fit` and `evaluate`, the `--verbose` of the training commands: 0 prints no progress,
# 1 a progress bar, 2 one line per epoch (pretraining: per checkpoint interval), which suits a log file.
VERBOSITIES = (0, 1, 2)
VERBOSE_HELP = "progress output: 0 none, 1 a progress bar, 2 one line per epoch (for log files)"

# `tf.distribute` strategies by name (`kbert.training.strategy.get_strategy`, the `--strategy` of training).
StrategyName = Literal["auto", "one_device", "mirrored", "multi_worker", "tpu"]
STRATEGY_NAMES: tuple[str, ...] = get_args(StrategyName)

# How a sentence embedding is pooled from the token vectors, as sentence-transformers' Pooling module's modes
# of the same names (`kbert.layers.sentence_pooling.SentencePooling`, the embed task's `--pooling`).
PoolingMode = Literal["mean", "cls", "max", "mean_sqrt_len_tokens"]
POOLING_MODES: tuple[str, ...] = get_args(PoolingMode)

# Batches whose examples are sorted by length together: in training (`kbert.data_pipeline.index_batches`) and
# where inference has its whole input (`kbert.length_batches`). Bounded, so memory stays flat on any corpus.
GROUP_WINDOW = 16

# The export's signature that embeds with a sentence model's prompt NAME (`kbert export` of a model with
# prompts; `kbert embed --prompt-name NAME` calls it).
PROMPT_SIGNATURE = "prompt_{}"
