"""MobileBERT's NoNorm (`x * gamma + beta`, no statistics) and the choice between it and LayerNorm."""

import keras

# MobileBERT's two normalisations (HF `normalization_type`): NoNorm (its released models) or LayerNorm.
NORMALIZATION_TYPES = ("no_norm", "layer_norm")
# HF builds some MobileBERT LayerNorms without `eps`: they use torch's default.
TORCH_LAYER_NORM_EPSILON = 1e-5


@keras.saving.register_keras_serializable(package="kerasbert")
class NoNorm(keras.layers.Layer):
    """An elementwise affine map over the last axis, `x * gamma + beta` (HF MobileBERT's `NoNorm`): MobileBERT
    replaces LayerNorm by it to save the mean and variance at inference.

    Examples:
        >>> layer = NoNorm()
        >>> tuple(layer(ops.ones((2, 5, 8))).shape)
        (2, 5, 8)
    """

    def build(self, input_shape):
        self.gamma = self.add_weight(shape=(input_shape[-1],), initializer="ones", name="gamma")
        self.beta = self.add_weight(shape=(input_shape[-1],), initializer="zeros", name="beta")
        self.built = True

    def call(self, x):
        return x * self.gamma + self.beta


def check_normalization_type(normalization_type):
    """A ValueError naming the choices when `normalization_type` is neither of `NORMALIZATION_TYPES`."""
    if normalization_type not in NORMALIZATION_TYPES:
        raise ValueError(f"normalization_type must be 'no_norm' (NoNorm, as in google/mobilebert-uncased) or "
                         f"'layer_norm' (HF MobileBertConfig.normalization_type), got {normalization_type!r}.")


def normalization(normalization_type, epsilon, name):
    """A float32 `NoNorm` or `LayerNormalization(epsilon)` called `name` (HF `NORM2FN[normalization_type]`).

    Examples:
        >>> type(normalization("no_norm", 1e-12, "norm")).__name__
        'NoNorm'
    """
    check_normalization_type(normalization_type)
    if normalization_type == "no_norm":
        return NoNorm(dtype="float32", name=name)
    return keras.layers.LayerNormalization(epsilon=epsilon, dtype="float32", name=name)
