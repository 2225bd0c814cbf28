"""XLNetRelativeAttention: XLNet's two-stream attention with relative positions and segments (Yang et al. 2019)."""

import keras
from keras import ops


def relative_shift(scores, key_length):
    """Align position scores `[batch, heads, T, key_length + T]` (column `c`: distance `key_length - c`) so that
    column `j` holds query `i`'s score for key `j` (HF `rel_shift_bnij`); returns `[batch, heads, T, key_length]`.

    Examples:
        >>> tuple(relative_shift(ops.ones((1, 2, 3, 8)), 5).shape)
        (1, 2, 3, 5)
    """
    heads, queries, columns = scores.shape[1], ops.shape(scores)[2], ops.shape(scores)[3]
    scores = ops.reshape(scores, (-1, heads, columns, queries))[:, :, 1:, :]
    scores = ops.reshape(scores, (-1, heads, queries, columns - 1))
    return scores[:, :, :, :key_length]


@keras.saving.register_keras_serializable(package="kerasbert")
class XLNetRelativeAttention(keras.layers.Layer):
    """XLNet's attention (HF `XLNetRelativeAttention`): content, relative-position and segment scores, then the
    output projection, dropout, the residual and a LayerNorm.

    Scores of query `i` and key `j` are `((q + r_w_bias) . k_j + shift((q + r_r_bias) . r) + (q + r_s_bias) .
    seg_embed[different segment]) / sqrt(head_dim)`; keys are the memory then the content stream. The
    content stream `h` queries for itself; the optional query stream `g` (`[batch, P, hidden]`, one row per
    prediction) queries at the positions `target_mapping` `[batch, P, T]` places it on, with its own mask.
    Masks are `[batch, T, memory + T]`, 1 where query `i` may attend to key `j`; a masked score gets -1e30 (HF's).

    Args:
        num_heads: attention heads (the head width is `hidden / num_heads`).
        dropout: dropout on the attention probabilities and on the projected output (HF's one `dropout`).
        layer_norm_epsilon: LayerNorm epsilon. initializer_range: stddev of the normal initialiser (HF's).

    Examples:
        >>> attention = XLNetRelativeAttention(num_heads=4)
        >>> h = ops.ones((2, 5, 32))
        >>> content, query = attention(h, relative_positional_encoding(5, 5, 32),
        ...                            relative_segment_encoding(ops.zeros((2, 5))), ops.ones((2, 5, 5)))
        >>> tuple(content.shape), query
        ((2, 5, 32), None)
    """

    def __init__(self, num_heads, dropout=0.1, layer_norm_epsilon=1e-12, initializer_range=0.02, **kwargs):
        super().__init__(**kwargs)
        self.num_heads = num_heads
        self.dropout = dropout
        self.layer_norm_epsilon = layer_norm_epsilon
        self.initializer_range = initializer_range
        self.dropout_layer = keras.layers.Dropout(dropout, dtype=self.dtype_policy)
        self.layer_norm = keras.layers.LayerNormalization(epsilon=layer_norm_epsilon, dtype=self.dtype_policy,
                                                          name="layer_norm")

    def build(self, input_shape):
        hidden_dim = input_shape[-1]
        if hidden_dim % self.num_heads:
            raise ValueError(f"The hidden width {hidden_dim} is not a multiple of num_heads={self.num_heads}: pick a "
                             "head count that divides it.")
        head_dim = hidden_dim // self.num_heads
        initializer = keras.initializers.RandomNormal(stddev=self.initializer_range)
        for name in ("query_kernel", "key_kernel", "value_kernel", "output_kernel", "position_kernel"):
            setattr(self, name, self.add_weight(shape=(hidden_dim, self.num_heads, head_dim), name=name,
                                                initializer=initializer))
        for name in ("content_bias", "position_bias", "segment_bias"):  # HF r_w_bias, r_r_bias, r_s_bias
            setattr(self, name, self.add_weight(shape=(self.num_heads, head_dim), name=name, initializer=initializer))
        self.segment_embedding = self.add_weight(shape=(2, self.num_heads, head_dim), name="segment_embedding",
                                                 initializer=initializer)
        self.layer_norm.build(input_shape)
        self.built = True

    def attend(self, queries, keys, values, position_keys, segment_encoding, mask, training):
        """`[batch, T, heads, head_dim]` attention vectors of `queries` `[batch, T, heads, head_dim]`."""
        key_length = ops.shape(keys)[1]
        content = ops.einsum("bind,bjnd->bnij", queries + self.content_bias, keys)
        position = ops.einsum("bind,jnd->bnij", queries + self.position_bias, position_keys)
        position = relative_shift(position, key_length)
        segment = ops.einsum("bind,snd->bnis", queries + self.segment_bias, self.segment_embedding)
        segment = ops.einsum("bijs,bnis->bnij", segment_encoding, segment)
        scores = (content + position + segment) * (1.0 / (queries.shape[-1] ** 0.5))
        scores = scores - 1e30 * (1.0 - ops.cast(mask, scores.dtype)[:, None, :, :])
        probabilities = self.dropout_layer(ops.softmax(scores, axis=-1), training=training)
        return ops.einsum("bnij,bjnd->bind", probabilities, values)

    def post_attention(self, residual, vectors, training):
        output = ops.einsum("bind,hnd->bih", vectors, self.output_kernel)
        return self.layer_norm(self.dropout_layer(output, training=training) + residual)

    def call(self, content, position_encoding, segment_encoding, content_mask, memory=None, query=None,
             query_mask=None, target_mapping=None, training=None):
        """`(content output, query output or None)`: `content` `[batch, T, hidden]`, `position_encoding`
        `[memory + 2T, hidden]`, `segment_encoding` `[batch, T, memory + T, 2]`, `memory` `[batch, M, hidden]`;
        `query` `[batch, P, hidden]` with `query_mask` and `target_mapping` `[batch, P, T]`."""
        keys_in = content if memory is None else ops.concatenate([ops.cast(memory, content.dtype), content], axis=1)
        keys = ops.einsum("bih,hnd->bind", keys_in, self.key_kernel)
        values = ops.einsum("bih,hnd->bind", keys_in, self.value_kernel)
        position_keys = ops.einsum("ih,hnd->ind", ops.cast(position_encoding, content.dtype), self.position_kernel)
        queries = ops.einsum("bih,hnd->bind", content, self.query_kernel)
        vectors = self.attend(queries, keys, values, position_keys, segment_encoding, content_mask, training)
        content_output = self.post_attention(content, vectors, training)
        if query is None:
            return content_output, None
        queries = ops.einsum("bph,hnd->bpnd", query, self.query_kernel)
        queries = ops.einsum("bpnd,bpt->btnd", queries, ops.cast(target_mapping, queries.dtype))
        vectors = self.attend(queries, keys, values, position_keys, segment_encoding, query_mask, training)
        vectors = ops.einsum("btnd,bpt->bpnd", vectors, ops.cast(target_mapping, vectors.dtype))
        return content_output, self.post_attention(query, vectors, training)

    def get_config(self):
        return {**super().get_config(), "num_heads": self.num_heads, "dropout": self.dropout,
                "layer_norm_epsilon": self.layer_norm_epsilon, "initializer_range": self.initializer_range}
