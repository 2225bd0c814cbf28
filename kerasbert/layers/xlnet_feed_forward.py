"""XLNetFeedForward: XLNet's position-wise feed-forward sublayer with its residual and LayerNorm."""

import keras

from kerasbert.layers.activations import get_activation
from kerasbert.layers.initializers import weight_initializer


@keras.saving.register_keras_serializable(package="kerasbert")
class XLNetFeedForward(keras.layers.Layer):
    """`LayerNorm(x + dropout(W2 dropout(activation(W1 x))))` (HF `XLNetFeedForward`).

    Args:
        intermediate_dim: the inner width (HF `d_inner`). activation: "gelu" (exact erf, HF's), "relu", ...
        dropout: after the activation and after the second projection. layer_norm_epsilon: LayerNorm epsilon.
        initializer_range: stddev of the kernels' initialiser.

    Examples:
        >>> feed_forward = XLNetFeedForward(intermediate_dim=64)
        >>> tuple(feed_forward(ops.ones((2, 5, 32))).shape)
        (2, 5, 32)
    """

    def __init__(self, intermediate_dim, activation="gelu", dropout=0.1, layer_norm_epsilon=1e-12,
                 initializer_range=0.02, **kwargs):
        super().__init__(**kwargs)
        self.intermediate_dim = intermediate_dim
        self.activation = activation
        self.dropout = dropout
        self.layer_norm_epsilon = layer_norm_epsilon
        self.initializer_range = initializer_range
        self.inner_dense = keras.layers.Dense(intermediate_dim, dtype=self.dtype_policy, name="inner_dense",
                                              kernel_initializer=weight_initializer(initializer_range))
        self.activation_function = get_activation(activation)
        self.output_dense = None
        self.dropout_layer = keras.layers.Dropout(dropout, dtype=self.dtype_policy)
        self.layer_norm = keras.layers.LayerNormalization(epsilon=layer_norm_epsilon, dtype=self.dtype_policy,
                                                          name="layer_norm")

    def build(self, input_shape):
        self.output_dense = keras.layers.Dense(input_shape[-1], dtype=self.dtype_policy, name="output_dense",
                                               kernel_initializer=weight_initializer(self.initializer_range))
        self.inner_dense.build(input_shape)
        self.output_dense.build((*input_shape[:-1], self.intermediate_dim))
        self.layer_norm.build(input_shape)
        self.built = True

    def call(self, inputs, training=None):
        x = self.dropout_layer(self.activation_function(self.inner_dense(inputs)), training=training)
        x = self.dropout_layer(self.output_dense(x), training=training)
        return self.layer_norm(x + inputs)

    def get_config(self):
        return {**super().get_config(), "intermediate_dim": self.intermediate_dim, "activation": self.activation,
                "dropout": self.dropout, "layer_norm_epsilon": self.layer_norm_epsilon,
                "initializer_range": self.initializer_range}
