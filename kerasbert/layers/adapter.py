"""Adapter: Houlsby et al. (2019)'s bottleneck module, placed inside a frozen encoder block."""

import keras

from kerasbert.layers.activations import get_activation
from kerasbert.layers.initializers import weight_initializer


@keras.saving.register_keras_serializable(package="kerasbert")
class Adapter(keras.layers.Layer):
    """`x + up(activation(down(x)))`: down-projection to `bottleneck_dim`, non-linearity, up-projection,
    residual. The up-projection starts at zero, so an inserted adapter is the identity at step 0 and
    the pre-trained model's outputs are unchanged until training moves it.

    `TransformerEncoderBlock(adapter_size=m)` puts one after the attention output and one after the
    feed-forward output (before each residual and LayerNorm, as Houlsby et al.).

    Args:
        bottleneck_dim: the adapter's width m (Houlsby et al.: 8 to 256; 64 is typical for BERT-base).
        activation: "gelu" (default), "relu", ... as `TransformerEncoderBlock` names them.
        initializer_range: stddev of the down-projection's initial weights.

    Examples:
        >>> adapter = Adapter(bottleneck_dim=4)
        >>> x = ops.ones((2, 3, 8))
        >>> bool(ops.all(adapter(x) == x))
        True
    """

    def __init__(self, bottleneck_dim, activation="gelu", initializer_range=0.02, **kwargs):
        super().__init__(**kwargs)
        self.bottleneck_dim = bottleneck_dim
        self.activation = activation
        self.activation_fn = get_activation(activation)
        self.initializer_range = initializer_range

    def build(self, input_shape):
        self.down = keras.layers.Dense(self.bottleneck_dim, dtype=self.dtype_policy, name="down",
                                       kernel_initializer=weight_initializer(self.initializer_range))
        self.up = keras.layers.Dense(input_shape[-1], kernel_initializer="zeros", dtype=self.dtype_policy, name="up")
        self.down.build(input_shape)
        self.up.build(tuple(input_shape[:-1]) + (self.bottleneck_dim,))
        self.built = True

    def call(self, x):
        return x + self.up(self.activation_fn(self.down(x)))

    def compute_output_shape(self, input_shape):
        return input_shape

    def get_config(self):
        return {**super().get_config(), "bottleneck_dim": self.bottleneck_dim, "activation": self.activation,
                "initializer_range": self.initializer_range}
