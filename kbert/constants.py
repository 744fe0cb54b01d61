"""Names every part of kbert agrees on, defined once: BERT's special tokens, the ignored label, objectives.

This module imports nothing from kbert, so every tier (text, data, models, training, export) may use it.
"""

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
