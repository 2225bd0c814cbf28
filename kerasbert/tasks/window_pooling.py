"""A long text's logits from its windows' logits (`BertClassifier(long_inputs=LongInputs(...))`).

"mean" averages the logits of a text's windows, "max" takes each logit's largest value over them. The model
stays one window -> logits: `pool_windows` pools its outputs at `predict`, `pooled_on_windows` inside the
training loss (keras.ops, every backend), and `pool_windows_in_graph` in an exported SavedModel.

Examples:
    >>> pool_windows(np.array([[1.0, 0.0], [3.0, 2.0], [5.0, 5.0]]), [0, 0, 1], 2, "mean").tolist()
    [[2.0, 1.0], [5.0, 5.0]]
"""

import keras
import numpy as np
import tensorflow as tf

WINDOW_POOLINGS = ("mean", "max")


def check_window_pooling(window_pooling):
    """`window_pooling` if it is "mean" or "max"; a ValueError naming the argument otherwise.

    Examples:
        >>> check_window_pooling("max")
        'max'
    """
    if not isinstance(window_pooling, str) or window_pooling not in WINDOW_POOLINGS:
        raise ValueError(f"window_pooling must be 'mean' or 'max' (how the logits of a long text's windows make "
                         f"the text's logits), got {window_pooling!r}.")
    return window_pooling


def pool_windows(logits, window_text, num_texts, window_pooling):
    """NumPy `[windows, ...]` logits -> `[num_texts, ...]`: the mean or max over each text's windows.

    Examples:
        >>> pool_windows(np.array([[1.0, 0.0], [3.0, 2.0], [5.0, 5.0]]), [0, 0, 1], 2, "max").tolist()
        [[3.0, 2.0], [5.0, 5.0]]
    """
    logits = np.asarray(logits, np.float32)
    window_text = np.asarray(window_text, np.int64)
    shape = (num_texts, *logits.shape[1:])
    if window_pooling == "max":
        pooled = np.full(shape, -np.inf, np.float32)
        np.maximum.at(pooled, window_text, logits)
        return pooled
    sums = np.zeros(shape, np.float32)
    np.add.at(sums, window_text, logits)
    counts = np.bincount(window_text, minlength=num_texts).astype(np.float32)
    return sums / counts.reshape(-1, *[1] * (logits.ndim - 1))


def pooled_on_windows(logits, window_text, window_pooling):
    """`[windows, classes]` logits -> `[windows, classes]`: on every window, its text's pooled logits (keras.ops,
    differentiable; `window_text` numbers the texts of the batch).

    Examples:
        >>> keras.ops.convert_to_numpy(pooled_on_windows(np.array([[1.0], [3.0], [5.0]]), np.array([0, 0, 1]),
        ...                                              "mean")).tolist()
        [[2.0], [2.0], [5.0]]
    """
    same_text = keras.ops.equal(keras.ops.expand_dims(window_text, 1), keras.ops.expand_dims(window_text, 0))
    if window_pooling == "max":
        others = keras.ops.where(keras.ops.expand_dims(same_text, -1), keras.ops.expand_dims(logits, 0),
                                 float("-inf"))
        return keras.ops.max(others, axis=1)
    weights = keras.ops.cast(same_text, logits.dtype)
    return keras.ops.matmul(weights, logits) / keras.ops.sum(weights, axis=1, keepdims=True)


def first_windows(window_text):
    """Per window: 1.0 on each text's first window, 0.0 on the others (`window_text` sorted). As weights of the
    pooled logits on every window, they count each text once.

    Examples:
        >>> keras.ops.convert_to_numpy(first_windows(np.array([0, 0, 0, 1]))).tolist()
        [1.0, 0.0, 0.0, 1.0]
    """
    previous = keras.ops.concatenate([keras.ops.full([1], -1, window_text.dtype), window_text[:-1]])
    return keras.ops.cast(keras.ops.not_equal(window_text, previous), "float32")


def pool_windows_in_graph(logits, window_text, window_pooling):
    """TensorFlow `[windows, classes]` -> `[texts, classes]` for a SavedModel (`window_text` sorted, every text
    with a window).

    Examples:
        >>> pool_windows_in_graph(tf.constant([[1.0], [3.0], [5.0]]), tf.constant([0, 0, 1]), "max").numpy().tolist()
        [[3.0], [5.0]]
    """
    if window_pooling == "max":
        return tf.math.segment_max(logits, window_text)
    return tf.math.segment_mean(logits, window_text)
