"""Unpadded execution: a per-token computation run on the real tokens of a padded batch only."""

import keras
from keras import ops

# Backends where the gather and scatter pay for themselves: JAX's jit needs static shapes, and torch's eager
# nonzero/scatter cost more than the padded positions' work (benchmarks/unpadded_modernbert.py: 0.88x at 56%
# real tokens).
UNPADDING_BACKENDS = ("tensorflow",)


def unpadding_works():
    """Whether this backend runs unpadded (TensorFlow does; JAX and torch keep the padding)."""
    return keras.config.backend() in UNPADDING_BACKENDS


def on_real_tokens(function, x, padding_mask):
    """`function` applied to the real tokens of `x` only: `[batch, T, hidden]` -> `[batch, T, width]` (the width
    `function` gives), zeros at padding.

    The real tokens are gathered into one `[tokens, hidden]` matrix (HF ModernBERT's unpadded layout, without
    its flash-attention kernel), `function` runs on it, and its rows go back to their places; a batch without
    padding runs as it is. For a per-token `function` (a feed-forward network, a norm) the real tokens' values
    are those of the padded computation; the work done is the real tokens' only. Where the backend does not
    unpad (`unpadding_works`), the padded computation runs and its padding is zeroed.

    Examples:
        >>> y = on_real_tokens(lambda tokens: tokens * 2, ops.ones((2, 3, 4)), ops.array([[1, 1, 0], [1, 0, 0]]))
        >>> ops.convert_to_numpy(y[:, :, 0]).tolist()
        [[2.0, 2.0, 0.0], [2.0, 0.0, 0.0]]
    """
    if not unpadding_works():  # the padded computation, its padding zeroed: the same result
        outputs = function(x)
        return outputs * ops.cast(padding_mask, outputs.dtype)[..., None]
    return ops.cond(ops.all(padding_mask > 0), lambda: function(x), lambda: packed(function, x, padding_mask))


def packed(function, x, padding_mask):
    """`on_real_tokens` of a batch with padding: gather, `function`, scatter."""
    batch, length = ops.shape(x)[0], ops.shape(x)[1]
    flat = ops.reshape(x, (-1, ops.shape(x)[-1]))
    (positions,) = ops.nonzero(ops.reshape(padding_mask, (-1,)))
    outputs = function(ops.take(flat, positions, axis=0))
    width = ops.shape(outputs)[-1]
    scattered = ops.scatter(ops.expand_dims(positions, -1), outputs, (batch * length, width))
    return ops.reshape(scattered, (batch, length, width))
