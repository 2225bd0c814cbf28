"""Rotary position embedding (RoPE, Su et al., 2021) of queries and keys, as HF `apply_rotary_pos_emb`."""

import keras
from keras import ops


@keras.saving.register_keras_serializable(package="kerasbert")
class RotaryEmbedding(keras.layers.Layer):
    """Rotate each `[B, heads, T, head_dim]` query or key by its position: the two halves of a head are
    paired (HF's `rotate_half`), pair `i` turns by `position / theta ** (2i / head_dim)`. No weights.

    Args:
        theta: the base of the frequencies (ModernBERT: `global_rope_theta` 160,000 on global layers,
            `local_rope_theta` 10,000 on local ones).

    Examples:
        >>> rope = RotaryEmbedding(theta=10000.0)
        >>> tuple(rope(ops.ones((1, 2, 5, 8))).shape)
        (1, 2, 5, 8)
    """

    def __init__(self, theta=10000.0, **kwargs):
        super().__init__(**kwargs)
        if theta <= 0:
            raise ValueError(f"RotaryEmbedding needs a positive theta (HF rope_theta), got {theta!r}.")
        self.theta = theta

    def call(self, x):
        head_dim = x.shape[-1]
        if head_dim % 2:
            raise ValueError(f"RotaryEmbedding needs an even head_dim, got {head_dim}: choose num_heads so that "
                             "hidden_dim / num_heads is even.")
        positions = ops.cast(ops.arange(ops.shape(x)[2]), "float32")
        inverse_frequencies = 1.0 / (self.theta ** (ops.cast(ops.arange(0, head_dim, 2), "float32") / head_dim))
        angles = positions[:, None] * inverse_frequencies[None, :]
        angles = ops.concatenate([angles, angles], axis=-1)
        first, second = ops.split(ops.cast(x, "float32"), 2, axis=-1)
        rotated = ops.concatenate([-second, first], axis=-1)
        output = ops.cast(x, "float32") * ops.cos(angles) + rotated * ops.sin(angles)
        return ops.cast(output, x.dtype)

    def get_config(self):
        return {**super().get_config(), "theta": self.theta}
