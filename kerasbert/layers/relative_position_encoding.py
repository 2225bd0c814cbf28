"""XLNet's sinusoidal encoding of relative distances (Transformer-XL, Dai et al. 2019)."""

from keras import ops


def relative_positional_encoding(query_length, key_length, hidden_dim, clamp_length=-1):
    """`[key_length + query_length, hidden_dim]` float32 sinusoids of the distances `key_length, ..., 1 - query_length`
    (HF `XLNetModel.relative_positional_encoding` with `attn_type="bi"`, `bi_data=False`): row `r` encodes
    distance `key_length - r` as `[sin(distance * f), cos(distance * f)]` with `f = 10000 ** (-2k / hidden_dim)`.
    `clamp_length > 0` clips the distances to `[-clamp_length, clamp_length]`.

    Examples:
        >>> tuple(relative_positional_encoding(3, 5, 8).shape)   # 3 queries, 2 memory + 3 current keys
        (8, 8)
    """
    frequencies = ops.arange(0, hidden_dim, 2, dtype="float32")
    inverse_frequencies = 1.0 / ops.power(10000.0, frequencies / hidden_dim)
    distances = ops.cast(ops.arange(key_length, -query_length, -1), "float32")
    if clamp_length > 0:
        distances = ops.clip(distances, -clamp_length, clamp_length)
    angles = distances[:, None] * inverse_frequencies[None, :]
    return ops.concatenate([ops.sin(angles), ops.cos(angles)], axis=-1)
