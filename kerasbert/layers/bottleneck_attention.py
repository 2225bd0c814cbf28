"""MobileBERT's self-attention: queries and keys from one input, values from another (HF
`MobileBertSelfAttention` with the dense of `MobileBertSelfOutput`)."""

import math

import keras
from keras import ops

from kerasbert.layers.attention import FLOAT32_MIN, attention_output_spec, merge_masks
from kerasbert.layers.initializers import weight_initializer


@keras.saving.register_keras_serializable(package="kerasbert")
class BottleneckAttention(keras.layers.Layer):
    """Multi-head attention whose queries and keys are projected from `query_key_input` and whose values from
    `value_input` (MobileBERT: the shared bottleneck and the block's input), as wide as `query_key_input`,
    then the output projection. Masked keys score the float32 minimum before a float32 softmax, as in HF.

    Args:
        num_heads: attention heads; they must divide the width of `query_key_input`.
        attention_dropout: dropout on the attention probabilities.
        initializer_range: standard deviation of the weight initialiser.

    Examples:
        >>> attention = BottleneckAttention(num_heads=2)
        >>> tuple(attention(ops.ones((1, 4, 8)), ops.ones((1, 4, 32))).shape)
        (1, 4, 8)
    """

    def __init__(self, num_heads, attention_dropout=0.1, initializer_range=0.02, **kwargs):
        super().__init__(**kwargs)
        self.num_heads = num_heads
        self.attention_dropout = attention_dropout
        self.initializer_range = initializer_range
        self.dropout_layer = keras.layers.Dropout(attention_dropout, dtype=self.dtype_policy)

    def build(self, query_key_input_shape, value_input_shape):
        width = query_key_input_shape[-1]
        if width % self.num_heads:
            raise ValueError(f"The attention width {width} (MobileBERT's true_hidden_size: intra_bottleneck_dim "
                             f"with a bottleneck, else hidden_dim) is not divisible by num_heads={self.num_heads}; "
                             "choose num_heads that divides it.")
        self.width, self.head_dim = width, width // self.num_heads
        initializer = weight_initializer(self.initializer_range)
        for name, shape in (("query", query_key_input_shape), ("key", query_key_input_shape),
                            ("value", value_input_shape), ("output_dense", query_key_input_shape)):
            dense = keras.layers.Dense(width, kernel_initializer=initializer, dtype=self.dtype_policy, name=name)
            dense.build(shape)
            setattr(self, name, dense)
        self.built = True

    def split_heads(self, x):
        """`[B, T, width]` -> `[B, heads, T, head_dim]`."""
        x = ops.reshape(x, (ops.shape(x)[0], ops.shape(x)[1], self.num_heads, self.head_dim))
        return ops.transpose(x, (0, 2, 1, 3))

    def call(self, query_key_input, value_input, padding_mask=None, return_attention_scores=False, training=None):
        query, key, value = (self.split_heads(dense(x)) for dense, x in
                             ((self.query, query_key_input), (self.key, query_key_input), (self.value, value_input)))
        scores = ops.cast(ops.matmul(query, ops.transpose(key, (0, 1, 3, 2))), "float32") / math.sqrt(self.head_dim)
        mask = merge_masks(padding_mask)
        if mask is not None:
            scores = ops.where(mask, scores, ops.cast(FLOAT32_MIN, "float32"))
        probabilities = ops.softmax(scores, axis=-1)
        dropped = self.dropout_layer(ops.cast(probabilities, self.compute_dtype), training=training)
        context = ops.transpose(ops.matmul(dropped, value), (0, 2, 1, 3))
        context = ops.reshape(context, (ops.shape(context)[0], ops.shape(context)[1], self.width))
        output = self.output_dense(context)
        return (output, probabilities) if return_attention_scores else output

    def compute_output_spec(self, query_key_input, value_input, padding_mask=None, return_attention_scores=False,
                            training=None):
        return attention_output_spec(query_key_input, self.num_heads, self.compute_dtype, return_attention_scores)

    def get_config(self):
        config = super().get_config()
        config.update({"num_heads": self.num_heads, "attention_dropout": self.attention_dropout,
                       "initializer_range": self.initializer_range})
        return config
