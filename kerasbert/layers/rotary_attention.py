"""Self-attention with rotary positions, optional biases and an optional sliding window (ModernBERT's)."""

import keras
from keras import ops

from kerasbert.layers.attention import MultiHeadSelfAttention
from kerasbert.layers.banded_attention import banded_attention
from kerasbert.layers.initializers import weight_initializer
from kerasbert.layers.rotary_embedding import RotaryEmbedding
from kerasbert.layers.unpadding import on_real_tokens


def sliding_window_mask(length, window):
    """`[1, T, T]` boolean mask of HF ModernBERT's local attention: query i sees key j when
    `|i - j| <= window // 2` (`window` is HF `local_attention`, the whole window).

    Examples:
        >>> sliding_window_mask(4, 2).shape
        (1, 4, 4)
    """
    positions = ops.arange(length)
    return (ops.abs(positions[:, None] - positions[None, :]) <= window // 2)[None]


@keras.saving.register_keras_serializable(package="kerasbert")
class RotarySelfAttention(MultiHeadSelfAttention):
    """`MultiHeadSelfAttention` whose queries and keys are rotated by `RotaryEmbedding` before scoring (HF
    `ModernBertAttention`), with `use_bias` on its projections (HF `attention_bias`) and, with `window`, local
    attention. The rotation lives in `attention_scores`, so the explicit path always runs (the fused kernel
    takes no rotation); it has no LoRA updates. Local attention runs in blocks (`banded_attention`: memory
    linear in the length), or, when the probabilities are returned, as the full scores under
    `sliding_window_mask`.

    Args:
        num_heads, attention_dropout, initializer_range: as `MultiHeadSelfAttention`.
        rope_theta: the `RotaryEmbedding` base.
        use_bias: biases on the fused Q/K/V and output projections.
        window: None (global attention) or HF `local_attention` (each token sees `window // 2` either side).
        unpadded: the Q/K/V and output projections on the real tokens only (`on_real_tokens`; on
            TensorFlow); the attention itself masks the padding.

    Examples:
        >>> attention = RotarySelfAttention(num_heads=2, rope_theta=10000.0, window=4)
        >>> tuple(attention(ops.ones((1, 6, 8))).shape)
        (1, 6, 8)
    """

    def __init__(self, num_heads, attention_dropout=0.0, initializer_range=0.02, rope_theta=10000.0,
                 use_bias=False, window=None, unpadded=False, **kwargs):
        super().__init__(num_heads, attention_dropout, initializer_range, **kwargs)
        if window is not None and window < 2:
            raise ValueError(f"window={window!r}: local attention needs a window of 2 or more tokens (HF "
                             "local_attention), or None for global attention.")
        self.rope_theta = rope_theta
        self.use_bias = use_bias
        self.window = window
        self.unpadded = unpadded
        self.real_tokens = None  # the padding mask of the call under way, with `unpadded`
        self.rotary = RotaryEmbedding(rope_theta, dtype=self.dtype_policy, name="rotary")

    def build(self, input_shape):
        hidden_dim = input_shape[-1]
        if hidden_dim % self.num_heads:
            raise ValueError(f"hidden_dim={hidden_dim} is not divisible by num_heads={self.num_heads}; "
                             "choose num_heads that divides the hidden size.")
        self.hidden_dim = hidden_dim
        self.head_dim = hidden_dim // self.num_heads
        initializer = weight_initializer(self.initializer_range)
        self.qkv_dense = keras.layers.Dense(3 * hidden_dim, use_bias=self.use_bias, kernel_initializer=initializer,
                                            dtype=self.dtype_policy, name="qkv_dense")
        self.qkv_dense.build(input_shape)
        self.output_dense = keras.layers.Dense(hidden_dim, use_bias=self.use_bias, kernel_initializer=initializer,
                                               dtype=self.dtype_policy, name="output_dense")
        self.output_dense.build(input_shape)
        self.built = True

    def attention_scores(self, query, key):
        """Scaled dot products of the rotated queries and keys."""
        return super().attention_scores(self.rotary(query), self.rotary(key))

    def call(self, x, padding_mask=None, return_attention_scores=False, training=None):
        self.real_tokens = padding_mask if self.unpadded else None
        try:
            if self.window is not None and not return_attention_scores:
                return self.local_attention(x, padding_mask, training)
            window = None if self.window is None else sliding_window_mask(ops.shape(x)[1], self.window)
            return super().call(x, padding_mask=padding_mask, attention_mask=window,
                                return_attention_scores=return_attention_scores, training=training)
        finally:
            self.real_tokens = None

    def on_tokens(self, dense, x):
        """`dense(x)`, on the real tokens only while an unpadded call runs."""
        return dense(x) if self.real_tokens is None else on_real_tokens(dense, x, self.real_tokens)

    def project_heads(self, x, training=None):
        query, key, value = ops.split(self.on_tokens(self.qkv_dense, x), 3, axis=-1)
        return self.split_heads(query), self.split_heads(key), self.split_heads(value)

    def project_output(self, context, training=None):
        batch, length = ops.shape(context)[0], ops.shape(context)[1]
        return self.on_tokens(self.output_dense, ops.reshape(context, (batch, length, self.hidden_dim)))

    def local_attention(self, x, padding_mask, training):
        """The window's attention in blocks of `window // 2` queries (`banded_attention`)."""
        query, key, value = self.project_heads(x)
        context = banded_attention(self.rotary(query), self.rotary(key), value, self.window // 2, padding_mask,
                                   dropout=lambda probabilities: self.dropout_layer(probabilities, training=training))
        return self.project_output(context)

    def compute_output_spec(self, x, padding_mask=None, return_attention_scores=False, training=None):
        return super().compute_output_spec(x, return_attention_scores=return_attention_scores)

    def get_config(self):
        config = super().get_config()
        for name in ("lora_config", "fused_attention"):
            config.pop(name)
        return {**config, "rope_theta": self.rope_theta, "use_bias": self.use_bias, "window": self.window,
                "unpadded": self.unpadded}
