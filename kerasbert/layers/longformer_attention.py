"""Longformer self-attention: a sliding window, plus global tokens that see and are seen by every token.

HF `LongformerSelfAttention`: a local query sees the keys within `attention_window // 2` positions either side
(`banded_attention`) and every global token, through the local projections; a global token's query attends to
the whole sequence through its own projections (HF `query_global`, `key_global`, `value_global`).

The number of global tokens is data-dependent, and JAX (and XLA) need static shapes, so every backend takes
the same path: each row's first `max_global_tokens` global positions are picked with `top_k` and gathered with
one-hot matrices `[B, max_global_tokens, T]` (memory linear in T). A global token past that bound attends, and
is seen, as a local one.
"""

import math

import keras
from keras import ops

from kerasbert.layers.attention import FLOAT32_MIN, MultiHeadSelfAttention
from kerasbert.layers.banded_attention import banded_attention
from kerasbert.layers.initializers import weight_initializer


def check_longformer_attention(window, max_global_tokens):
    """ValueErrors naming the fix for a window HF Longformer cannot have or a bad bound on global tokens."""
    if isinstance(window, bool) or not isinstance(window, int) or window < 2 or window % 2:
        raise ValueError(f"window={window!r}: Longformer's attention_window must be an even int of 2 or more "
                         "(512 in allenai/longformer-base-4096).")
    if isinstance(max_global_tokens, bool) or not isinstance(max_global_tokens, int) or max_global_tokens < 0:
        raise ValueError(f"max_global_tokens={max_global_tokens!r}: give the most global tokens a row may have, "
                         "an int >= 0 (0: no global attention).")


def global_picks(is_global, count):
    """`([B, count, T] one-hot rows of each row's first `count` global positions in order, zero rows where a row
    has fewer), [B, count] which rows are real)` of a `[B, T]` boolean mask.

    Examples:
        >>> picks, found = global_picks(ops.array([[False, True, True]]), 2)  # picks[0] = [[0, 1, 0], [0, 0, 1]]
    """
    length = ops.shape(is_global)[1]
    flags = ops.pad(ops.cast(is_global, "float32"), ((0, 0), (0, count)))  # `count` more slots: top_k always fits
    positions = ops.cast(ops.arange(ops.shape(flags)[1]), "float32")
    _, order = ops.top_k(flags * ops.cast(ops.shape(flags)[1], "float32") - positions, k=count)  # globals first
    found = ops.take_along_axis(flags, order, axis=1) > 0
    picks = ops.logical_and(ops.equal(order[:, :, None], ops.arange(length)[None, None, :]), found[:, :, None])
    return picks, found


@keras.saving.register_keras_serializable(package="kerasbert")
class LongformerSelfAttention(MultiHeadSelfAttention):
    """`MultiHeadSelfAttention` as HF `LongformerSelfAttention` (see the module docstring): `qkv_dense` holds
    HF `query`/`key`/`value`, `global_qkv_dense` HF `query_global`/`key_global`/`value_global`. No LoRA, no
    fused kernel, no returned probabilities (Longformer's are not a `[T, T]` matrix).

    Args:
        num_heads, attention_dropout, initializer_range: as `MultiHeadSelfAttention`.
        window: HF `attention_window` of this layer (even): each token sees `window // 2` either side.
        max_global_tokens: the most global tokens a row may have (a static bound; see the module docstring).

    Call args:
        x: `[B, T, hidden]`. padding_mask: `[B, T]`, true on real tokens.
        attention_mask: `[B, T]`, true on global tokens (HF `global_attention_mask`), or None: none.

    Examples:
        >>> attention = LongformerSelfAttention(num_heads=2, window=4, max_global_tokens=2)
        >>> x = ops.ones((1, 9, 8))
        >>> tuple(attention(x, attention_mask=ops.array([[1, 0, 0, 0, 0, 0, 0, 0, 0]])).shape)
        (1, 9, 8)
    """

    def __init__(self, num_heads, attention_dropout=0.1, initializer_range=0.02, window=512, max_global_tokens=128,
                 **kwargs):
        super().__init__(num_heads, attention_dropout, initializer_range, **kwargs)
        check_longformer_attention(window, max_global_tokens)
        if self.lora_config:
            raise ValueError("LongformerSelfAttention has no LoRA updates: build it with lora_config=None.")
        self.window = window
        self.max_global_tokens = max_global_tokens

    def build(self, input_shape):
        super().build(input_shape)
        self.global_qkv_dense = keras.layers.Dense(3 * self.hidden_dim, dtype=self.dtype_policy,
                                                   kernel_initializer=weight_initializer(self.initializer_range),
                                                   name="global_qkv_dense")
        self.global_qkv_dense.build(input_shape)

    def call(self, x, padding_mask=None, attention_mask=None, return_attention_scores=False, training=None):
        if return_attention_scores:
            raise ValueError("LongformerSelfAttention returns no attention probabilities (they are no [T, T] "
                             "matrix): build the backbone with output_attentions=False.")
        batch, length = ops.shape(x)[0], ops.shape(x)[1]
        real = ops.ones((batch, length), "bool") if padding_mask is None else ops.cast(padding_mask, "bool")
        query, key, value = (self.split_heads(part) for part in ops.split(self.qkv_dense(x), 3, axis=-1))

        def dropout(probabilities):
            return self.dropout_layer(probabilities, training=training)

        if attention_mask is None or not self.max_global_tokens:
            context = banded_attention(query, key, value, self.window // 2, real, dropout)
        else:
            picks, found = global_picks(ops.logical_and(ops.cast(attention_mask, "bool"), real),
                                        self.max_global_tokens)
            picks = ops.cast(picks, self.compute_dtype)
            is_global = ops.sum(picks, axis=1) > 0  # the global tokens kept (at most max_global_tokens a row)
            global_keys, global_values = (ops.einsum("bgt,bhtd->bhgd", picks, part) for part in (key, value))
            local = ops.logical_and(real, ops.logical_not(is_global))  # HF removes the global keys from windows
            context = banded_attention(query, key, value, self.window // 2, local, dropout, global_keys,
                                       global_values, found)
            kept = ops.cast(ops.logical_not(is_global), context.dtype)[:, :, None, None]
            global_context = self.global_context(x, picks, real, dropout)
            context = context * kept + ops.einsum("bgt,bghd->bthd", picks, global_context)
        output = self.output_dense(ops.reshape(context, (batch, length, self.hidden_dim)))
        return output

    def global_context(self, x, picks, real, dropout):
        """`[B, G, heads, d]` context of the picked global queries over every real key (HF's global
        projections)."""
        query, key, value = ops.split(self.global_qkv_dense(x), 3, axis=-1)
        query = self.split_heads(ops.einsum("bgt,bth->bgh", picks, query))
        key, value = self.split_heads(key), self.split_heads(value)
        scores = ops.cast(ops.einsum("bhgd,bhtd->bhgt", query, key), "float32") / math.sqrt(self.head_dim)
        probabilities = ops.softmax(ops.where(real[:, None, None, :], scores, FLOAT32_MIN), axis=-1)
        probabilities = ops.cast(dropout(probabilities), value.dtype)
        return ops.einsum("bhgt,bhtd->bghd", probabilities, value)

    def compute_output_spec(self, x, padding_mask=None, attention_mask=None, return_attention_scores=False,
                            training=None):
        return keras.KerasTensor(x.shape, self.compute_dtype)

    def get_config(self):
        config = super().get_config()
        config.update({"window": self.window, "max_global_tokens": self.max_global_tokens})
        return config
