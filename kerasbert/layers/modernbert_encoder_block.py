"""ModernBERT's pre-norm encoder block (HF `ModernBertEncoderLayer`)."""

import keras

from kerasbert.layers.geglu_feed_forward import GegluFeedForward
from kerasbert.layers.rotary_attention import RotarySelfAttention
from kerasbert.layers.unpadding import on_real_tokens


@keras.saving.register_keras_serializable(package="kerasbert")
class ModernBertEncoderBlock(keras.layers.Layer):
    """`x + attention(norm(x))`, then `x + GeGLU(norm(x))`: pre-norm, no norm after. HF's first layer has no
    attention norm (`nn.Identity`, since the embeddings end with a norm): `attention_norm=False` there.

    Args:
        num_heads, intermediate_dim: the attention heads and the GeGLU inner width.
        rope_theta: the rotary base of this layer (HF `global_rope_theta` or `local_rope_theta`).
        window: None (global attention) or HF `local_attention`.
        attention_norm: a LayerNorm before the attention (False on HF's layer 0).
        norm_bias, attention_bias, mlp_bias: as HF `ModernBertConfig`.
        dropout: HF `mlp_dropout`. layer_norm_epsilon: HF `norm_eps`.
        unpadded: run the attention's projections and the feed-forward half on the real tokens only
            (`on_real_tokens`; on TensorFlow: JAX and torch keep the padding): the same values on the real tokens,
            the padded positions' work saved.
        activation, attention_dropout, initializer_range: as HF `ModernBertConfig` and `BertBackbone`.

    Examples:
        >>> block = ModernBertEncoderBlock(num_heads=2, intermediate_dim=12, rope_theta=10000.0, window=4)
        >>> tuple(block(ops.ones((1, 6, 8))).shape)
        (1, 6, 8)
    """

    def __init__(self, num_heads, intermediate_dim, rope_theta=10000.0, window=None, attention_norm=True,
                 norm_bias=False, attention_bias=False, mlp_bias=False, activation="gelu", dropout=0.0,
                 attention_dropout=0.0, layer_norm_epsilon=1e-5, initializer_range=0.02, unpadded=False, **kwargs):
        super().__init__(**kwargs)
        self.num_heads = num_heads
        self.intermediate_dim = intermediate_dim
        self.rope_theta = rope_theta
        self.window = window
        self.attention_norm = attention_norm
        self.norm_bias = norm_bias
        self.attention_bias = attention_bias
        self.mlp_bias = mlp_bias
        self.activation = activation
        self.dropout = dropout
        self.attention_dropout = attention_dropout
        self.layer_norm_epsilon = layer_norm_epsilon
        self.initializer_range = initializer_range
        self.unpadded = unpadded

        def norm(name):
            return keras.layers.LayerNormalization(epsilon=layer_norm_epsilon, center=norm_bias,
                                                   dtype=self.dtype_policy, name=name)

        self.attention_layer_norm = norm("attention_norm") if attention_norm else None
        self.attention = RotarySelfAttention(num_heads, attention_dropout, initializer_range, rope_theta,
                                             attention_bias, window, unpadded, dtype=self.dtype_policy,
                                             name="attention")
        # HF `out_drop` uses attention_dropout on the attention output.
        self.attention_output_dropout = keras.layers.Dropout(attention_dropout, dtype=self.dtype_policy)
        self.mlp_layer_norm = norm("mlp_norm")
        self.mlp = GegluFeedForward(intermediate_dim, activation, mlp_bias, dropout, initializer_range,
                                    dtype=self.dtype_policy, name="mlp")

    def build(self, input_shape):
        if self.attention_layer_norm is not None:
            self.attention_layer_norm.build(input_shape)
        self.attention.build(input_shape)
        self.mlp_layer_norm.build(input_shape)
        self.mlp.build(input_shape)
        self.built = True

    def call(self, x, padding_mask=None, return_attention_scores=False, training=None):
        normed = x if self.attention_layer_norm is None else self.attention_layer_norm(x)
        attended = self.attention(normed, padding_mask=padding_mask,
                                  return_attention_scores=return_attention_scores, training=training)
        if return_attention_scores:
            attended, probabilities = attended
        x = x + self.attention_output_dropout(attended, training=training)
        def feed_forward(tokens):
            return self.mlp(self.mlp_layer_norm(tokens), training=training)

        if self.unpadded and padding_mask is not None:
            x = x + on_real_tokens(feed_forward, x, padding_mask)
        else:
            x = x + feed_forward(x)
        return (x, probabilities) if return_attention_scores else x

    def compute_output_spec(self, x, padding_mask=None, return_attention_scores=False, training=None):
        return self.attention.compute_output_spec(x, return_attention_scores=return_attention_scores)

    def get_config(self):
        return {**super().get_config(), **{name: getattr(self, name) for name in (
            "num_heads", "intermediate_dim", "rope_theta", "window", "attention_norm", "norm_bias",
            "attention_bias", "mlp_bias", "activation", "dropout", "attention_dropout", "layer_norm_epsilon",
            "initializer_range", "unpadded")}}
