"""Keras' int8 grid in float: what quantisation-aware training computes on (`kerasbert.fine_tuning`)."""

import keras
from keras import ops

INT8_LEVELS = 127  # Keras' abs-max int8: values in [-127, 127]


def fake_int8(x, axis):
    """`x` rounded to Keras' abs-max int8 grid along `axis` and scaled back, with an identity gradient (the
    straight-through estimator).

    Examples:
        >>> fake_int8(ops.convert_to_tensor([[0.5, -1.0, 0.3]]), axis=-1)   # [[0.5039, -1.0, 0.2992]]
    """
    x = ops.convert_to_tensor(x)
    scale = INT8_LEVELS / (ops.max(ops.abs(x), axis=axis, keepdims=True) + keras.backend.epsilon())
    rounded = ops.clip(ops.round(x * scale), -INT8_LEVELS, INT8_LEVELS) / scale
    return x + ops.stop_gradient(rounded - x)
