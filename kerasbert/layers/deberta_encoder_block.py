"""DeBERTa's encoder block: disentangled self-attention, then BERT's post-LN residual feed-forward."""

import keras

from kerasbert.layers.activations import get_activation
from kerasbert.layers.disentangled_attention import DisentangledSelfAttention
from kerasbert.layers.initializers import weight_initializer


@keras.saving.register_keras_serializable(package="kerasbert")
class DebertaEncoderBlock(keras.layers.Layer):
    """HF `DebertaV2Layer`: `DisentangledSelfAttention`, Dense + dropout + LayerNorm over the residual, then
    `Dense(intermediate_dim) -> activation -> Dense` + dropout + LayerNorm over the residual.

    Not a `TransformerEncoderBlock`: every DeBERTa block reads the backbone's shared relative embeddings, a
    second input that `TransformerEncoderBlock`'s attention (and its adapters, LoRA and pre-LN options) has no
    place for. Call it as `block(x, rel_embeddings=table, padding_mask=mask)`. With `query_states` (HF's, used by
    DeBERTa's enhanced mask decoder) the attention's queries and its residual are `query_states`; keys and values
    are `x`.

    Examples:
        >>> block = DebertaEncoderBlock(4, 64, pos_att_type=["p2c", "c2p"], position_buckets=8)
        >>> tuple(block(ops.ones((2, 5, 32)), rel_embeddings=ops.ones((16, 32)), padding_mask=ops.ones((2, 5))).shape)
        (2, 5, 32)
    """

    def __init__(self, num_heads, intermediate_dim, relative_attention=True, pos_att_type=("p2c", "c2p"),
                 position_buckets=256, max_relative_positions=512, share_att_key=True, activation="gelu",
                 dropout=0.0, attention_dropout=0.0, layer_norm_epsilon=1e-7, initializer_range=0.02, **kwargs):
        super().__init__(**kwargs)
        self.num_heads = num_heads
        self.intermediate_dim = intermediate_dim
        self.activation = activation
        self.dropout = dropout
        self.layer_norm_epsilon = layer_norm_epsilon
        self.initializer_range = initializer_range
        self.attention = DisentangledSelfAttention(num_heads, relative_attention, pos_att_type, position_buckets,
                                                   max_relative_positions, share_att_key, dropout, attention_dropout,
                                                   initializer_range, dtype=self.dtype_policy, name="attention")
        initializer = weight_initializer(initializer_range)
        self.attention_output = None
        self.intermediate = keras.layers.Dense(intermediate_dim, activation=get_activation(activation),
                                               kernel_initializer=initializer, dtype=self.dtype_policy,
                                               name="intermediate")
        self.output_dense = None
        self.attention_norm, self.output_norm = (
            keras.layers.LayerNormalization(epsilon=layer_norm_epsilon, dtype=self.dtype_policy, name=name)
            for name in ("attention_norm", "output_norm"))
        self.dropout_layer = keras.layers.Dropout(dropout, dtype=self.dtype_policy)

    def build(self, inputs_shape, rel_embeddings_shape=None, padding_mask_shape=None):
        hidden_dim = inputs_shape[-1]
        initializer = weight_initializer(self.initializer_range)
        self.attention.build(inputs_shape)
        self.attention_output, self.output_dense = (
            keras.layers.Dense(hidden_dim, kernel_initializer=initializer, dtype=self.dtype_policy, name=name)
            for name in ("attention_output", "output_dense"))
        self.attention_output.build(inputs_shape)
        self.attention_norm.build(inputs_shape)
        self.intermediate.build(inputs_shape)
        self.output_dense.build(tuple(inputs_shape[:-1]) + (self.intermediate_dim,))
        self.output_norm.build(inputs_shape)

    def call(self, inputs, rel_embeddings=None, padding_mask=None, query_states=None, return_attention_scores=False,
             training=None):
        attended = self.attention(inputs, rel_embeddings=rel_embeddings, padding_mask=padding_mask,
                                  query_states=query_states, return_attention_scores=return_attention_scores,
                                  training=training)
        attended, probabilities = attended if return_attention_scores else (attended, None)
        residual = inputs if query_states is None else query_states
        x = self.attention_norm(residual + self.dropout_layer(self.attention_output(attended), training=training))
        y = self.dropout_layer(self.output_dense(self.intermediate(x)), training=training)
        outputs = self.output_norm(x + y)
        return (outputs, probabilities) if return_attention_scores else outputs

    def get_config(self):
        attention = self.attention
        return {**super().get_config(), **{name: getattr(self, name) for name in (
            "num_heads", "intermediate_dim", "activation", "dropout", "layer_norm_epsilon", "initializer_range")},
            **{name: getattr(attention, name) for name in (
                "relative_attention", "pos_att_type", "position_buckets", "max_relative_positions", "share_att_key",
                "attention_dropout")}}
