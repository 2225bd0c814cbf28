"""What a task's `fit`, `evaluate` and `predict` accept: raw data (handled by kerasbert) or tensors (handed to
Keras), a positive `batch_size` and `epochs`, checked before any computation; the batches an epoch of tensors
makes.

Examples:
    >>> is_raw(["a lovely film"]), is_raw({"token_ids": ids})
    (True, False)
    >>> check_run_arguments(None, 32)
    Traceback (most recent call last):
    TypeError: No data was given: pass a DataFrame, a list or Series of texts, one text, or a tf.data.Dataset.
"""

import numpy as np
import pandas as pd
import tensorflow as tf

from kerasbert.arguments import check_count
from kerasbert.training.distribution import rows_of

DEFAULT_BATCH_SIZE = 32


def is_raw(data):
    """True for user-level data (DataFrame, Series, strings, dict of columns); False for tensors."""
    if data is None or isinstance(data, tf.data.Dataset):
        return False
    if isinstance(data, dict):
        return "token_ids" not in data
    if isinstance(data, np.ndarray):
        return data.dtype.kind in "OUS"
    return isinstance(data, (pd.DataFrame, pd.Series, list, tuple, str))


def check_run_arguments(data, batch_size, epochs=1):
    """TypeError/ValueError for no data, or a `batch_size`/`epochs` that is not a positive int."""
    if data is None:
        raise TypeError("No data was given: pass a DataFrame, a list or Series of texts, one text, "
                        "or a tf.data.Dataset.")
    if isinstance(data, (bool, int, float, complex, bytes, np.number)):
        raise TypeError(f"Cannot read {type(data).__name__} {data!r} as data: pass a DataFrame, a list or Series of "
                        "texts, one text, or a tf.data.Dataset.")
    if batch_size is not None:
        check_count("batch_size", batch_size)
    check_count("epochs", epochs)


def steps_of(x, batch_size):
    """Batches per epoch of Keras-level data (arrays, a dict of them, a `tf.data.Dataset` of known length), for
    the default learning-rate schedule."""
    if isinstance(x, tf.data.Dataset):
        steps = int(x.cardinality())
        if steps < 0:
            raise ValueError(
                "This tf.data.Dataset has an unknown length, so the default learning-rate "
                "schedule cannot be sized: call `compile(...)` yourself, or give the dataset a "
                "known length (e.g. `dataset.apply(tf.data.experimental.assert_cardinality(n))`)."
            )
        return steps
    return int(np.ceil(rows_of(x) / (batch_size or DEFAULT_BATCH_SIZE)))
