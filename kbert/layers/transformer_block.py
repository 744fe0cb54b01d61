"""BERT's post-LN transformer block, computed as fused matmuls with float32 element-wise work (XLA-compiled in a
training step of fixed shape)."""

from __future__ import annotations

import keras
import keras_hub
import tensorflow as tf

from kbert.layers import token_packing


def _dropout(x, rate: float, seed):
    """Inverted dropout whose mask comes from ThreeFry, a counter-based generator XLA runs fast on CPU
    (TensorFlow's default generator inside XLA costs 16-18% of a mini step, BENCHMARKS.md)."""
    if rate == 0.0:
        return x
    keep = tf.random.stateless_uniform(tf.shape(x), seed=seed, alg="threefry") >= rate
    return tf.where(keep, x / tf.cast(1.0 - rate, x.dtype), tf.zeros((), x.dtype))


def _padding_adder(padding_mask, dtype):
    """(batch, 1, 1, key): 0 for real keys and -1e9 for padded ones, which softmax then weighs exp(-1e9) = 0."""
    # expand_dims rather than [:, None, None, :]: TFLite has no kernel for a strided slice with new axes.
    return tf.cast(tf.expand_dims(tf.expand_dims(1.0 - tf.cast(padding_mask, tf.float32), 1), 1) * -1e9, dtype)


@tf.function(jit_compile=True)
def _attention_probabilities(scores, padding_mask, rate: float, seed):
    """softmax(scores over the real keys), then dropout; in float32, returned in the scores' dtype."""
    probabilities = tf.nn.softmax(tf.cast(scores, tf.float32) + _padding_adder(padding_mask, tf.float32), axis=-1)
    return _dropout(tf.cast(probabilities, scores.dtype), rate, seed)


@tf.function(jit_compile=True)
def _add_and_normalize(y, bias, residual, gamma, beta, epsilon: float, rate: float, seed):
    """LayerNorm(residual + dropout(y + bias)), normalised in float32."""
    z = tf.cast(_dropout(y + tf.cast(bias, y.dtype), rate, seed), tf.float32) + tf.cast(residual, tf.float32)
    mean, variance = tf.nn.moments(z, axes=[-1], keepdims=True)
    normalized = (z - mean) * tf.math.rsqrt(variance + epsilon) * gamma + beta
    return tf.cast(normalized, y.dtype)


@tf.function(jit_compile=True)
def _bias_and_activation(h, bias, activation):
    return tf.cast(activation(tf.cast(h, tf.float32) + bias), h.dtype)


@keras.saving.register_keras_serializable(package="kbert")
class BertTransformerBlock(keras_hub.layers.TransformerEncoder):
    """BERT's transformer block (post-LN), keras-hub's `TransformerEncoder` with a faster training step.

        x = LayerNorm(x + Dropout(SelfAttention(x)))
        x = LayerNorm(x + Dropout(Dense_H(activation(Dense_4H(x)))))

    The sublayers, weights and names are keras-hub's (`normalize_first=False`), so checkpoints, converters
    and exports see keras-hub's block. With a padding mask, `call` computes the same function another way:
    the products run as plain TensorFlow matmuls (query, key and value as one), and the element-wise work
    between them (the masked softmax with its dropout; bias, dropout, residual and LayerNorm; bias and
    activation) runs in float32 whatever the compute dtype. In a training step whose sequence length is
    fixed at tracing, as in pretraining, those three pieces run as small XLA programs, forward and
    backward (XLA compiles once per shape; with dynamic padding, as in fine-tuning, every new length would
    compile anew, so those steps run keras-hub's `call`). Keras' layers run each of those as separate
    passes over memory, which is most of a step on CPU once the products run in bfloat16 (BENCHMARKS.md,
    "kbert's own transformer block"). Inference runs the same fused path, except that bias and activation
    join their matmul and the softmax runs in the compute dtype: oneDNN computes each as one kernel that
    works in float32 inside and rounds once. LayerNorm runs as the XLA piece when the length is fixed at
    tracing and as plain ops when it is open (a SavedModel's signatures and TFLite, where any batch and
    length run in one graph). Under Keras' mixed bfloat16 policy, MiniLM's encoder ran 1.18x PyTorch's
    autocast at 32 x 128 and the strings-in export 1.10x (BENCHMARKS.md; docs/investigations/bf16-inference.md
    times each piece). Dropout masks come from ThreeFry, seeded by the block's own dropout layers, so each site
    keeps its own stream.

    Args:
        intermediate_dim: int. Feed-forward width (4H in BERT).
        num_heads: int. Attention heads.
        dropout: float. Dropout rate on attention probabilities and on both sublayer outputs.
        activation: the feed-forward activation, a Keras activation function or name.
        layer_norm_epsilon: float. LayerNorm epsilon.
        **kwargs: the rest of keras-hub's `TransformerEncoder` arguments (initializers, name, dtype).

    At inference the encoder hands the block its real tokens alone (`positions`, `kbert.layers.token_packing`):
    the products and element-wise pieces run on (tokens, hidden), and attention gets the (batch, seq) grid by a
    scatter of query, key and value and gives its context back by a gather.

    Call arguments:
        inputs: float tensor (batch, seq, hidden), or (tokens, hidden) with `positions`.
        padding_mask: int or bool tensor (batch, seq), 1 for real tokens.
        training: bool.
        positions: optional int64 tensor (tokens, 1), `token_packing.token_positions(padding_mask)`: `inputs`
            are the real tokens alone, row after row (inference only).

    Returns:
        Float tensor shaped as `inputs`.

    Example:
    >>> block = BertTransformerBlock(intermediate_dim=16, num_heads=2)
    >>> block(keras.ops.ones((1, 3, 8)), padding_mask=keras.ops.ones((1, 3), "int32")).shape
    TensorShape([1, 3, 8])
    """

    def __init__(self, intermediate_dim, num_heads, **kwargs):
        if kwargs.get("normalize_first"):
            raise ValueError("BertTransformerBlock is BERT's post-LN block; normalize_first must be False")
        super().__init__(intermediate_dim, num_heads, **kwargs)

    def call(self, inputs, padding_mask=None, attention_mask=None, training=None, return_attention_scores=False,
             positions=None):
        if positions is not None:  # packed tokens (kbert.layers.token_packing): inference only
            if training:
                raise ValueError("BertTransformerBlock runs packed tokens at inference only")
            return self._fused_call(inputs, padding_mask, training=False, compiled=False, positions=positions)
        # XLA compiles once per shape, so the compiled path needs a sequence length fixed when the step is
        # traced (pretraining's batches); with dynamic padding (fine-tuning) each new length would compile anew.
        fixed_length = inputs.shape[1] is not None
        if padding_mask is None or attention_mask is not None or return_attention_scores \
                or (training and not fixed_length):
            return super().call(inputs, padding_mask=padding_mask, attention_mask=attention_mask,
                                training=training, return_attention_scores=return_attention_scores)
        return self._fused_call(inputs, padding_mask, training=bool(training), compiled=fixed_length)

    def _fused_call(self, inputs, padding_mask, training: bool, compiled: bool, positions=None):
        """The block as fused matmuls and float32 element-wise pieces, with dropout in training; LayerNorm runs
        as an XLA program when `compiled` (a length fixed at tracing), as plain TensorFlow ops otherwise.
        Training is always compiled (`call` sends an open-length training step to keras-hub's `call`).

        With `positions` (`token_packing.token_positions(padding_mask)`), `inputs` are the real tokens alone,
        (tokens, hidden): every product and element-wise piece runs on them, and attention, which needs the
        grid, gets query, key and value scattered into it and gives its context back gathered."""
        attention = self._self_attention_layer
        rate = self.dropout if training else 0.0
        add_and_normalize = _add_and_normalize if compiled else _add_and_normalize.python_function
        dtype = inputs.dtype
        batch, length, hidden = tf.shape(padding_mask)[0], tf.shape(padding_mask)[1], inputs.shape[-1]
        heads = self.num_heads
        head_dim = hidden // heads
        scale = head_dim**-0.5  # on the query's weights, before rounding: no pass over the activations

        def matrix(dense, rows=hidden):  # the float32 kernel as a (rows, columns) matrix
            return tf.reshape(dense.kernel, [rows, -1])

        def vector(variable):
            return tf.cast(tf.reshape(variable, [-1]), tf.float32)

        def seed(dropout_layer):
            return dropout_layer.seed_generator.next() if rate > 0.0 else tf.zeros([2], tf.int64)

        packed = positions is not None
        x = inputs if packed else tf.reshape(inputs, [-1, hidden])  # (tokens or batch * seq, hidden)

        # === Self-attention ===
        query_key_value = tf.matmul(x, tf.cast(tf.concat(
            [matrix(attention._query_dense) * scale, matrix(attention._key_dense), matrix(attention._value_dense)],
            1), dtype))
        bias = tf.concat([vector(attention._query_dense.bias) * scale, vector(attention._key_dense.bias),
                          vector(attention._value_dense.bias)], 0)
        query_key_value = tf.nn.bias_add(query_key_value, tf.cast(bias, dtype))
        if packed:  # (batch * seq, 3 * hidden), zeros at padding, whose keys the mask hides
            query_key_value = token_packing.unpack(query_key_value, positions, padding_mask)
        if training:
            # (3, batch, heads, seq, head_dim); unstack, whose gradient is a stack, not three zero-filled slices.
            query_key_value = tf.transpose(tf.reshape(query_key_value, [batch, length, 3, heads, head_dim]),
                                           [2, 0, 3, 1, 4])
            query, key, value = tf.unstack(query_key_value, axis=0)
        else:  # split: TFLite's unpack refuses an empty batch
            query, key, value = (tf.transpose(tf.reshape(part, [batch, length, heads, head_dim]), [0, 2, 1, 3])
                                 for part in tf.split(query_key_value, 3, axis=-1))
        scores = tf.matmul(query, key, transpose_b=True)  # (batch, heads, seq, seq)
        if training:
            probabilities = _attention_probabilities(scores, padding_mask, rate, seed(attention._dropout_layer))
        else:  # oneDNN's softmax sums in float32 whatever the dtype: as close as the float32 piece, faster
            probabilities = tf.nn.softmax(scores + _padding_adder(padding_mask, dtype), axis=-1)
        context = tf.matmul(probabilities, value)  # (batch, heads, seq, head_dim)
        context = tf.reshape(tf.transpose(context, [0, 2, 1, 3]), [-1, hidden])
        if packed:
            context = tf.gather_nd(context, positions)  # (tokens, hidden)
        y = tf.matmul(context, tf.cast(matrix(attention._output_dense), dtype))
        norm = self._self_attention_layer_norm
        x = add_and_normalize(y, vector(attention._output_dense.bias), x, vector(norm.gamma), vector(norm.beta),
                              norm.epsilon, rate, seed(self._self_attention_dropout))

        # === Feed-forward ===
        intermediate, output = self._feedforward_intermediate_dense, self._feedforward_output_dense
        h = tf.matmul(x, tf.cast(matrix(intermediate), dtype))
        if training:
            h = _bias_and_activation(h, vector(intermediate.bias), intermediate.activation)
        else:  # matmul, bias and activation as one oneDNN kernel, rounded once: 2.2x faster than plain float32 ops
            h = intermediate.activation(tf.nn.bias_add(h, tf.cast(intermediate.bias, dtype)))
        y = tf.matmul(h, tf.cast(matrix(output, rows=self.intermediate_dim), dtype))
        norm = self._feedforward_layer_norm
        x = add_and_normalize(y, vector(output.bias), x, vector(norm.gamma), vector(norm.beta),
                              norm.epsilon, rate, seed(self._feedforward_dropout))
        return x if packed else tf.reshape(x, [batch, length, hidden])
