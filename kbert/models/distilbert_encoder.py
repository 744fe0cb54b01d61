"""The DistilBERT encoder: BERT's, without segments."""

from __future__ import annotations

import keras

from kbert.config import DistilBertConfig
from kbert.models.bert_encoder import BertEncoder


@keras.saving.register_keras_serializable(package="kbert")
class DistilBertEncoder(BertEncoder):
    """DistilBERT (Sanh et al. 2019): BERT's encoder, distilled into half the layers, with no segment table.

    The layers, weights and function are `BertEncoder`'s (Hugging Face's `DistilBertModel` computes the same post-LN
    blocks under other names: q_lin, k_lin, v_lin, out_lin, sa_layer_norm, ffn.lin1, ffn.lin2, output_layer_norm)
    except for two things:

    - the embeddings are token + position, with no segment table (type_vocab_size 0): `segment_ids` is still an
      input, so that tasks and exports see one interface, and changes nothing. The tokenizer is BERT's WordPiece
      one; the segment ids it packs for a text pair are simply not read.
    - DistilBERT has no pooler, and its checkpoints hold none. `pooled_output` is BERT's tanh(Dense([CLS])) all the
      same, started fresh (random) and trained by fine-tuning, as Hugging Face's `DistilBertForSequenceClassification`
      starts its `pre_classifier` (a Dense + ReLU on [CLS]) fresh: one interface for every task's head, and no
      warning at loading since no DistilBERT checkpoint could hold it. A kbert checkpoint keeps the trained pooler.

    Args:
        vocab_size, hidden_size, num_hidden_layers, num_attention_heads, intermediate_size, hidden_act,
        hidden_dropout_prob, attention_probs_dropout_prob, max_position_embeddings, type_vocab_size,
        initializer_range, layer_norm_eps: `BertEncoder`'s, with DistilBERT's defaults (`kbert.DistilBertConfig`):
            num_hidden_layers 6, type_vocab_size 0.
        dtype: a Keras dtype policy name.

    Call arguments and returns: `BertEncoder`'s (`token_ids`, `segment_ids`, `padding_mask` in; `sequence_output`,
    `pooled_output` out).

    Example:
    >>> encoder = DistilBertEncoder(vocab_size=50, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
    ...                             intermediate_size=32, max_position_embeddings=16)
    >>> ids = keras.ops.convert_to_tensor([[2, 7, 8, 3, 9, 3]])  # [CLS] a [SEP] b [SEP]
    >>> first = encoder({"token_ids": ids, "segment_ids": 0 * ids, "padding_mask": 0 * ids + 1})
    >>> pair = encoder({"token_ids": ids, "segment_ids": keras.ops.convert_to_tensor([[0, 0, 0, 0, 1, 1]]),
    ...                 "padding_mask": 0 * ids + 1})
    >>> bool(keras.ops.all(first["sequence_output"] == pair["sequence_output"])), encoder.embeddings.segment_embedding
    (True, None)
    """

    config_class = DistilBertConfig

    def __init__(self, dtype=None, **kwargs):
        config, kwargs = self.config_class.split_kwargs(kwargs)
        self._build_encoder(config, dtype, **kwargs)
