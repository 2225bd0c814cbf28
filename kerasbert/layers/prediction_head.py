"""PredictionHead: ModernBERT's task-head transform (HF `ModernBertPredictionHead`), with its pooling."""

import keras

from kerasbert.layers.activations import get_activation
from kerasbert.layers.initializers import weight_initializer
from kerasbert.layers.sentence_pooling import SentencePooling


@keras.saving.register_keras_serializable(package="kerasbert")
class PredictionHead(keras.layers.Layer):
    """`LayerNorm(activation(Dense(x)))` at the hidden width, as HF's ModernBERT task models compute before their
    `classifier`: on every token (token classification, QA) or on one vector per example.

    `pooling="mean"` first averages the token vectors over the real tokens of `padding_mask` (HF
    `classifier_pooling="mean"`); `pooling=None` transforms what it is given: the `[CLS]` vector
    (`classifier_pooling="cls"`) or every token.

    Args:
        activation: kerasbert's activation name (HF `classifier_activation`, translated).
        use_bias: a bias on the Dense (HF `classifier_bias`). norm_bias: a beta on the LayerNorm (HF `norm_bias`).
        layer_norm_epsilon: HF `norm_eps`. pooling: None or "mean". initializer_range: the kernel's initialiser.

    Examples:
        >>> head = PredictionHead(pooling="mean")
        >>> tuple(head(ops.ones((2, 5, 8)), ops.ones((2, 5))).shape)
        (2, 8)
    """

    def __init__(self, activation="gelu", use_bias=False, norm_bias=False, layer_norm_epsilon=1e-5, pooling=None,
                 initializer_range=0.02, **kwargs):
        super().__init__(**kwargs)
        if pooling not in (None, "mean"):
            raise ValueError(f"pooling={pooling!r}: PredictionHead pools by None (what it is given) or 'mean'.")
        self.activation, self.use_bias, self.norm_bias = activation, use_bias, norm_bias
        self.layer_norm_epsilon, self.pooling, self.initializer_range = layer_norm_epsilon, pooling, initializer_range
        self.activation_fn = get_activation(activation)
        self.pooling_layer = SentencePooling("mean") if pooling else None

    def build(self, input_shape):
        width = input_shape[-1]
        self.dense = keras.layers.Dense(width, use_bias=self.use_bias, dtype=self.dtype_policy, name="dense",
                                        kernel_initializer=weight_initializer(self.initializer_range))
        self.dense.build((None, width))
        self.norm = keras.layers.LayerNormalization(epsilon=self.layer_norm_epsilon, center=self.norm_bias,
                                                    dtype=self.dtype_policy, name="norm")
        self.norm.build((None, width))
        self.built = True

    def call(self, inputs, padding_mask=None):
        if self.pooling_layer is not None:
            inputs = self.pooling_layer(inputs, padding_mask)
        return self.norm(self.activation_fn(self.dense(inputs)))

    def compute_output_shape(self, inputs_shape, padding_mask_shape=None):
        return (inputs_shape[0], inputs_shape[-1]) if self.pooling else tuple(inputs_shape)

    def get_config(self):
        return {**super().get_config(), **{name: getattr(self, name) for name in (
            "activation", "use_bias", "norm_bias", "layer_norm_epsilon", "pooling", "initializer_range")}}
