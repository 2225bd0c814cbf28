"""Reformer's local self-attention (HF `LocalSelfAttention` and `ReformerSelfOutput`): the sequence cut into chunks,
each attending to itself and its neighbour chunks."""

import math

import keras
from keras import ops

from kerasbert.layers.chunked_attention import (
    by_length,
    check_chunk_length,
    dropout,
    look_adjacent,
    masked_softmax,
    merge_heads,
    sequence_length,
    split_heads,
    to_chunks,
)
from kerasbert.layers.initializers import weight_initializer


@keras.saving.register_keras_serializable(package="kerasbert")
class ChunkedLocalSelfAttention(keras.layers.Layer):
    """Local self-attention as HF Reformer computes it (encoder: no causal mask).

    Queries, keys and values are projected without bias into `num_heads` heads of `head_dim`; the sequence is cut
    into chunks of `chunk_length` and each chunk's queries see the keys of that chunk, of the `num_chunks_before`
    previous and the `num_chunks_after` next chunks, circularly as HF (with chunks before, the first chunk sees the
    last). A sequence no longer than one chunk attends fully. Padded keys get HF's -1e9. The heads are merged and
    projected back to the input width without bias.

    Args:
        num_heads, head_dim: heads and their width (HF `num_attention_heads`, `attention_head_size`).
        chunk_length: HF `local_attn_chunk_length`; a longer sequence must be a multiple of it.
        num_chunks_before, num_chunks_after: HF `local_num_chunks_before` / `_after`.
        attention_dropout: dropout on the attention weights (HF `local_attention_probs_dropout_prob`).
        initializer_range: stddev of the projections' initialiser.

    Examples:
        >>> attention = ChunkedLocalSelfAttention(num_heads=2, head_dim=4, chunk_length=4)
        >>> tuple(attention(ops.ones((1, 8, 6)), ops.ones((1, 8), "bool")).shape)
        (1, 8, 6)
    """

    def __init__(self, num_heads, head_dim, chunk_length, num_chunks_before=1, num_chunks_after=0,
                 attention_dropout=0.0, initializer_range=0.02, **kwargs):
        super().__init__(**kwargs)
        self.num_heads = num_heads
        self.head_dim = head_dim
        self.chunk_length = chunk_length
        self.num_chunks_before = num_chunks_before
        self.num_chunks_after = num_chunks_after
        self.attention_dropout = attention_dropout
        self.initializer_range = initializer_range
        self.seed_generator = keras.random.SeedGenerator()
        dense = dict(use_bias=False, kernel_initializer=weight_initializer(initializer_range), dtype=self.dtype_policy)
        self.query_dense = keras.layers.Dense(num_heads * head_dim, name="query", **dense)
        self.key_dense = keras.layers.Dense(num_heads * head_dim, name="key", **dense)
        self.value_dense = keras.layers.Dense(num_heads * head_dim, name="value", **dense)
        self.output_dense = None  # built with the input width

    def build(self, x_shape, padding_mask_shape=None):
        for dense in (self.query_dense, self.key_dense, self.value_dense):
            dense.build(x_shape)
        self.output_dense = keras.layers.Dense(x_shape[-1], use_bias=False, name="output",
                                               kernel_initializer=weight_initializer(self.initializer_range),
                                               dtype=self.dtype_policy)
        self.output_dense.build((*x_shape[:-1], self.num_heads * self.head_dim))

    def call(self, x, padding_mask, training=False):
        """`x` `[batch, T, hidden]`, `padding_mask` `[batch, T]` (true on real tokens) -> `[batch, T, hidden]`."""
        length = sequence_length(x)
        check_chunk_length(length, self.chunk_length, self.name)
        query, key, value = (split_heads(dense(x), self.num_heads, self.head_dim)
                             for dense in (self.query_dense, self.key_dense, self.value_dense))
        key = key / math.sqrt(self.head_dim)
        key_mask = ops.cast(padding_mask, "bool")[:, None, :]  # [batch, 1, T]

        def plain():
            probabilities, _ = masked_softmax(ops.matmul(query, ops.swapaxes(key, -1, -2)), key_mask[:, :, None, :])
            return ops.matmul(dropout(self, probabilities, training), value)

        def chunked():
            near = [look_adjacent(to_chunks(t, self.chunk_length), self.num_chunks_before, self.num_chunks_after)
                    for t in (key, value, key_mask[..., None])]
            dots = ops.matmul(to_chunks(query, self.chunk_length), ops.swapaxes(near[0], -1, -2))
            probabilities, _ = masked_softmax(dots, ops.swapaxes(near[2], -1, -2))
            out = ops.matmul(dropout(self, probabilities, training), near[1])
            return ops.reshape(out, ops.shape(query))

        return self.output_dense(merge_heads(by_length(length, self.chunk_length, plain, chunked)))

    def get_config(self):
        return {**super().get_config(), "num_heads": self.num_heads, "head_dim": self.head_dim,
                "chunk_length": self.chunk_length, "num_chunks_before": self.num_chunks_before,
                "num_chunks_after": self.num_chunks_after, "attention_dropout": self.attention_dropout,
                "initializer_range": self.initializer_range}
