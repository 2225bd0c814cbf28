"""Rows of different lengths in numpy: one flat array and the rows' lengths (what a `tf.RaggedTensor` of rank 2
holds), for inference batches built without TensorFlow ops.

Examples:
    >>> rows = RaggedRows(np.array([101, 7, 102, 101, 102], np.int32), np.array([3, 2]))
    >>> row_lengths(rows).tolist()
    [3, 2]
"""

import numpy as np
import tensorflow as tf


class RaggedRows:
    """Rows of different lengths as one flat numpy array and the rows' lengths, gathered and padded in numpy.

    Examples:
        >>> rows = RaggedRows(np.array([101, 7, 102, 101, 102], np.int32), np.array([3, 2]))
        >>> rows.padded(np.array([1, 0]), width=4, value=0).tolist()
        [[101, 102, 0, 0], [101, 7, 102, 0]]
    """

    def __init__(self, flat, lengths):
        self.flat = flat
        self.lengths = np.asarray(lengths, np.int64)
        self.starts = np.concatenate([[0], np.cumsum(self.lengths)[:-1]]).astype(np.int64)

    @property
    def dtype(self):
        return self.flat.dtype

    def padded(self, rows, width, value):
        """`[len(rows), width]`: the rows in `rows` order, each followed by `value` up to `width`."""
        lengths = self.lengths[rows]
        batch = np.full((len(rows), width), value, self.flat.dtype)
        batch[np.arange(width) < lengths[:, None]] = np.concatenate(
            [self.flat[start:start + length] for start, length in zip(self.starts[rows], lengths)])
        return batch

    def to_tensorflow(self):
        return tf.RaggedTensor.from_row_lengths(self.flat, self.lengths)


def row_lengths(rows):
    """The row lengths (numpy int64) of `RaggedRows` or a `tf.RaggedTensor`."""
    return rows.lengths if isinstance(rows, RaggedRows) else rows.row_lengths().numpy()
