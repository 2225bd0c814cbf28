"""Reformer's reversible block (HF `ReformerLayer`): `Y1 = X1 + Attention(X2)`, `Y2 = X2 + FeedForward(Y1)`."""

import keras
from keras import ops

from kerasbert.layers.initializers import weight_initializer


@keras.saving.register_keras_serializable(package="kerasbert")
class ReversibleBlock(keras.layers.Layer):
    """One reversible Reformer layer on the two residual streams `(x1, x2)`:
    `y1 = x1 + dropout(attention(LayerNorm(x2)))`, `y2 = x2 + dropout(W2 activation(dropout(W1 LayerNorm(y1)) +
    b1) + b2)` (HF's dropout before the activation). Since `x2 = y2 - FeedForward(y1)` and `x1 = y1 -
    Attention(x2)`, a backward pass can recompute the inputs instead of storing them (HF's `_ReversibleFunction`;
    kerasbert's `reversible_stack`, `ReformerBackbone(invert_blocks=True)`).

    The feed-forward network runs on `feed_forward_chunk_size` positions at a time (sequentially, `ops.map`) when
    that is set (HF `chunk_size_feed_forward`; the sequence must be a multiple of it), else on all at once.

    Args:
        attention: an `LshSelfAttention` or `ChunkedLocalSelfAttention` (HF `attn_layers` chooses per layer).
        intermediate_dim: HF `feed_forward_size`. activation: HF `hidden_act`.
        dropout: HF `hidden_dropout_prob`. layer_norm_epsilon, initializer_range: as HF.
        feed_forward_chunk_size: see above (0: unchunked).

    Examples:
        >>> block = ReversibleBlock(ChunkedLocalSelfAttention(2, 4, chunk_length=4), intermediate_dim=12)
        >>> y1, y2 = block(ops.ones((1, 8, 6)), ops.ones((1, 8, 6)), ops.ones((1, 8), "bool"))
    """

    def __init__(self, attention, intermediate_dim, activation="relu", dropout=0.0, layer_norm_epsilon=1e-12,
                 initializer_range=0.02, feed_forward_chunk_size=0, **kwargs):
        super().__init__(**kwargs)
        if isinstance(attention, dict):
            attention = keras.saving.deserialize_keras_object(attention)
        self.attention = attention
        self.intermediate_dim = intermediate_dim
        self.activation = activation
        self.dropout = dropout
        self.layer_norm_epsilon = layer_norm_epsilon
        self.initializer_range = initializer_range
        self.feed_forward_chunk_size = feed_forward_chunk_size
        norm = dict(epsilon=layer_norm_epsilon, dtype=self.dtype_policy)
        self.attention_layer_norm = keras.layers.LayerNormalization(name="attention_layer_norm", **norm)
        self.feed_forward_layer_norm = keras.layers.LayerNormalization(name="feed_forward_layer_norm", **norm)
        self.intermediate_dense = keras.layers.Dense(intermediate_dim, name="intermediate", dtype=self.dtype_policy,
                                                     kernel_initializer=weight_initializer(initializer_range))
        self.activation_fn = keras.activations.get(activation)
        self.output_dense = None  # built with the input width
        self.dropout_layer = keras.layers.Dropout(dropout, dtype=self.dtype_policy)

    def build(self, x1_shape, x2_shape=None, padding_mask_shape=None):
        hidden_dim = x1_shape[-1]
        self.attention_layer_norm.build(x1_shape)
        self.attention.build(x1_shape)
        self.feed_forward_layer_norm.build(x1_shape)
        self.intermediate_dense.build(x1_shape)
        self.output_dense = keras.layers.Dense(hidden_dim, name="output", dtype=self.dtype_policy,
                                               kernel_initializer=weight_initializer(self.initializer_range))
        self.output_dense.build((*x1_shape[:-1], self.intermediate_dim))

    def feed_forward(self, x, training=False):
        """The position-wise network on `LayerNorm(x)` (unchunked)."""
        hidden = self.dropout_layer(self.intermediate_dense(self.feed_forward_layer_norm(x)), training=training)
        return self.dropout_layer(self.output_dense(self.activation_fn(hidden)), training=training)

    def chunked_feed_forward(self, x, training=False):
        """`feed_forward` on `feed_forward_chunk_size` positions at a time (all at once when it is 0)."""
        size = self.feed_forward_chunk_size
        if not size:
            return self.feed_forward(x, training)
        batch, hidden_dim = ops.shape(x)[0], x.shape[-1]
        chunks = ops.moveaxis(ops.reshape(x, (batch, -1, size, hidden_dim)), 1, 0)
        out = ops.map(lambda chunk: self.feed_forward(chunk, training), chunks)
        return ops.reshape(ops.moveaxis(out, 0, 1), ops.shape(x))

    def attend(self, x, padding_mask, training=False):
        """The attention half: `dropout(attention(LayerNorm(x)))`."""
        attended = self.attention(self.attention_layer_norm(x), padding_mask, training=training)
        return self.dropout_layer(attended, training=training)

    def call(self, x1, x2, padding_mask, training=False):
        """`(x1, x2)` `[batch, T, hidden]` each, `padding_mask` `[batch, T]` -> `(y1, y2)`."""
        y1 = x1 + self.attend(x2, padding_mask, training)
        return y1, x2 + self.chunked_feed_forward(y1, training)

    def get_config(self):
        return {**super().get_config(), "attention": keras.saving.serialize_keras_object(self.attention),
                "intermediate_dim": self.intermediate_dim, "activation": self.activation, "dropout": self.dropout,
                "layer_norm_epsilon": self.layer_norm_epsilon, "initializer_range": self.initializer_range,
                "feed_forward_chunk_size": self.feed_forward_chunk_size}
