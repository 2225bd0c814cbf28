"""The weight initialiser of every kerasbert layer and task head, in one place."""

import keras


def weight_initializer(initializer_range=0.02):
    """Initialiser of kernels and embedding tables: truncated normal with `initializer_range` as its stddev
    (Google BERT's and keras-hub's; biases start at zero, LayerNorm at one and zero).

    Examples:
        >>> layer = keras.layers.Dense(4, kernel_initializer=weight_initializer(0.02))
    """
    return keras.initializers.TruncatedNormal(stddev=initializer_range)
