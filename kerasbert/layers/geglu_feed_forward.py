"""GeGLU feed-forward (Shazeer, 2020) as HF `ModernBertMLP`: one projection to twice the inner width, the
activation of its first half times its second half, back to the hidden width."""

import keras
from keras import ops

from kerasbert.layers.activations import get_activation
from kerasbert.layers.initializers import weight_initializer


@keras.saving.register_keras_serializable(package="kerasbert")
class GegluFeedForward(keras.layers.Layer):
    """`Wo(dropout(activation(a) * b))` where `a, b` are the halves of `Wi(x)` (HF `Wi`, `Wo`).

    Args:
        intermediate_dim: the inner width (`Wi` projects to twice it).
        activation: applied to the first half (ModernBERT: exact "gelu").
        use_bias: biases on `Wi` and `Wo` (HF `mlp_bias`).
        dropout: dropout before `Wo` (HF `mlp_dropout`).
        initializer_range: standard deviation of the weight initialiser.

    Examples:
        >>> tuple(GegluFeedForward(12)(ops.ones((1, 3, 8))).shape)
        (1, 3, 8)
    """

    def __init__(self, intermediate_dim, activation="gelu", use_bias=False, dropout=0.0, initializer_range=0.02,
                 **kwargs):
        super().__init__(**kwargs)
        self.intermediate_dim = intermediate_dim
        self.activation = activation
        self.use_bias = use_bias
        self.dropout = dropout
        self.initializer_range = initializer_range
        self.activation_fn = get_activation(activation)
        self.dropout_layer = keras.layers.Dropout(dropout, dtype=self.dtype_policy)

    def build(self, input_shape):
        initializer = weight_initializer(self.initializer_range)
        self.input_dense = keras.layers.Dense(2 * self.intermediate_dim, use_bias=self.use_bias,
                                              kernel_initializer=initializer, dtype=self.dtype_policy, name="wi")
        self.input_dense.build(input_shape)
        self.output_dense = keras.layers.Dense(input_shape[-1], use_bias=self.use_bias,
                                               kernel_initializer=initializer, dtype=self.dtype_policy, name="wo")
        self.output_dense.build((*input_shape[:-1], self.intermediate_dim))
        self.built = True

    def call(self, x, training=None):
        inputs, gate = ops.split(self.input_dense(x), 2, axis=-1)
        return self.output_dense(self.dropout_layer(self.activation_fn(inputs) * gate, training=training))

    def get_config(self):
        return {**super().get_config(), **{name: getattr(self, name) for name in (
            "intermediate_dim", "activation", "use_bias", "dropout", "initializer_range")}}
