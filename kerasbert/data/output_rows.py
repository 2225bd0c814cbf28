"""Model outputs as rows: put back in input order, concatenated across batches of other lengths, or empty.

Examples:
    >>> in_input_order({"logits": np.array([[0.2], [0.9]])}, np.array([1, 0]))["logits"].tolist()
    [[0.9], [0.2]]
"""

import keras
import numpy as np
import tensorflow as tf


def empty_like_output(output):
    """A numpy array of no rows shaped like the symbolic model `output` (unknown sizes 0), for an empty predict."""
    return np.zeros((0, *[size or 0 for size in output.shape[1:]]), output.dtype)


def ragged_from_padded(packed):
    """Dense packer outputs -> ragged `token_ids`/`segment_ids` (padding removed, on either side: XLNet pads on
    the left)."""
    real = tf.cast(packed["padding_mask"], tf.bool)
    return {key: tf.ragged.boolean_mask(packed[key], real) for key in ("token_ids", "segment_ids")}


def with_known_row_lengths(structure):
    """`structure` with each ragged tensor rebuilt around its row lengths, computed once and kept: a ragged
    tensor that a `tf.function` returns recomputes them (eager ops, ~0.3 ms) at every `row_lengths()`."""
    return tf.nest.map_structure(
        lambda part: tf.RaggedTensor.from_row_lengths(part.flat_values, part.row_lengths(), validate=False)
        if isinstance(part, tf.RaggedTensor) else part, structure)


def concatenate_padded(batches):
    """Per-batch output structures -> one structure of arrays, each leaf zero-padded along its token
    axes to the longest batch (batches of another length differ in axis 1), then concatenated.

    Examples:
        >>> concatenate_padded([np.ones((2, 3)), np.ones((1, 5))]).shape
        (3, 5)
    """
    def concatenate(*arrays):
        arrays = [np.asarray(array) for array in arrays]
        widest = np.max([array.shape for array in arrays], axis=0)
        padded = [np.pad(array, [(0, 0)] + [(0, int(w - n)) for w, n in zip(widest[1:], array.shape[1:])])
                  for array in arrays]
        return np.concatenate(padded)

    return keras.tree.map_structure(concatenate, *batches)


def in_input_order(outputs, order):
    """Undo `order` on every array of `outputs`: row `order[i]` of the result is row `i` of the input.

    Examples:
        >>> in_input_order({"logits": np.array([[0.2], [0.9]])}, np.array([1, 0]))["logits"].tolist()
        [[0.9], [0.2]]
    """
    if isinstance(outputs, dict):
        return {key: in_input_order(value, order) for key, value in outputs.items()}
    if isinstance(outputs, (list, tuple)):
        return type(outputs)(in_input_order(value, order) for value in outputs)
    restored = np.empty_like(outputs)
    restored[order] = outputs
    return restored
